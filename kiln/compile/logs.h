#pragma once
// KILN_LOGS=graph,fusion,code,guards,recompiles,perf: what the compiler prints on stderr, as
// PyTorch's TORCH_LOGS. kiln::compiler::set_logs overrides the variable.
#include <string>

namespace kiln::compiler {

enum class LogKind { Graph, Fusion, Code, Guards, Recompiles, Perf };
bool log_enabled(LogKind kind);
void log(LogKind kind, const std::string& text);

// A comma list of KILN_LOGS names ("" turns logging off); unknown names are an error.
void set_logs(const std::string& kinds);
}  // namespace kiln::compiler
