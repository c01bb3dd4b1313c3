#pragma once
// The graph of an exported program as JSON, the "kiln.program" entry of its file's safetensors
// metadata (docs/export.md has the schema). Internal to kiln/export.
#include <map>
#include <string>
#include <string_view>

#include "kiln/export/exported_program.h"
#include "kiln/io/reporter.h"

namespace kiln::export_detail {

// The schema version this Kiln writes and the newest it reads.
constexpr int64_t kProgramVersion = 1;
constexpr const char* kProgramFormat = "kiln.exported_program";

std::string program_to_json(const ExportedProgram& program);

// Reads and validates the JSON, taking the captured tensors from `weights` by name (each must
// match its value's dtype and shape, and none may be left over).
ExportedProgram program_from_json(std::string_view json, std::map<std::string, Tensor> weights,
                                  const io::detail::Reporter& r);

}  // namespace kiln::export_detail
