#pragma once
// `kiln fr DIR`: reads the flight recorder's dumps (kiln/distributed/flight_recorder.h), lines up
// each group's collectives across the ranks by sequence number and reports the first divergence:
// a rank that never called a collective the others did, different ops, sizes or dtypes, or a
// collective left unfinished; and pairs each send with its recv, reporting a call left waiting
// for a peer that never made its half. It names the culprit ranks.

namespace kiln::cli {

// argv: what follows "fr". Returns 0 (all agree), 1 (a divergence) or 2 (bad input).
int fr(int argc, char** argv);

}  // namespace kiln::cli
