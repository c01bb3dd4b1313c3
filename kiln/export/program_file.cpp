// An exported program's file: a safetensors file (docs/io.md) whose tensors are the program's
// captured tensors and whose metadata holds its graph ("kiln.program", program_format.h).

#include "kiln/export/program_format.h"
#include "kiln/io/safetensors.h"

namespace kiln {

namespace {

constexpr const char* kGraphKey = "kiln.program";

std::map<std::string, Tensor> captured_by_name(const ExportedProgram& p) {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < p.captured_specs().size(); ++i)
    out.emplace(p.captured_specs()[i].name, p.graph().captured_tensors[i].detach());
  return out;
}

ExportedProgram from_file(const io::SafetensorsFile& file, const std::string& source) {
  const io::detail::Reporter r("load_program: '" + source + "': ");
  return r.run([&] {
    auto it = file.metadata.find(kGraphKey);
    KILN_IO_CHECK(r, it != file.metadata.end(),
                  "not an exported Kiln program (a safetensors file without the '", kGraphKey,
                  "' metadata entry)");
    return export_detail::program_from_json(it->second, file.tensors, r);
  });
}

}  // namespace

std::vector<uint8_t> ExportedProgram::to_bytes() const {
  return io::to_safetensors_bytes(captured_by_name(*this),
                                  {{kGraphKey, export_detail::program_to_json(*this)}});
}

void ExportedProgram::save(const std::string& path) const {
  io::save_safetensors(captured_by_name(*this), path,
                       {{kGraphKey, export_detail::program_to_json(*this)}});
}

ExportedProgram load_program(const std::string& path) {
  return from_file(io::load_safetensors(path), path);
}

ExportedProgram load_program_from_bytes(const uint8_t* data, size_t size,
                                        const std::string& source) {
  return from_file(io::from_safetensors_bytes(data, size, source), source);
}

}  // namespace kiln
