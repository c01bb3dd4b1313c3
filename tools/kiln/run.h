#pragma once
// `kiln run`: a torchrun-like launcher for the ranks of one machine (docs/distributed.md).

namespace kiln::cli {

// argv: what follows "run" on the command line. Returns the process's exit status.
int run(int argc, char** argv);

}  // namespace kiln::cli
