// The `kiln` command. `kiln ops` lists the op registry; `kiln info` says how the CPU kernels run
// on this machine; `kiln run` launches the ranks of a distributed program (run.h); `kiln fr`
// reads flight-recorder dumps (fr.h); `kiln inspect` describes an exported program, `kiln export
// --onnx` writes it as ONNX and `kiln aot` builds it into a shared library.
#include <cstring>
#include <iostream>

#include "kiln/backend/cpu/blas.h"
#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/core/device_backend.h"
#include "kiln/export/onnx.h"
#include "kiln/func/batching_rules.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tools/kiln/fr.h"
#include "tools/kiln/run.h"

namespace {

// Forward mode is the vjp of the vjp: it needs a backward that is differentiable in turn.
bool has_jvp(const kiln::OpDef& op) { return op.differentiable() && op.backward_differentiable; }
// How vmap batches the op: its own rule, its family's (pointwise, dims) or the loop.
const char* vmap_rule(const kiln::OpDef& op) {
  return kiln::func::detail::to_string(kiln::func::detail::batch_rule_kind(op));
}

int info() {
  namespace cpu = kiln::cpu;
  std::cout << "cpu capability:     " << kiln::get_cpu_capability()
            << " (best on this CPU: " << cpu::to_string(cpu::max_cpu_capability())
            << "; KILN_CPU_CAPABILITY lowers it)\n"
            << "threads:            " << kiln::get_num_threads() << "\n"
            << "float32 matmul:     " << cpu::f32_gemm_path() << "\n"
            << "bfloat16 matmul:    " << cpu::bf16_gemm_path() << "\n"
            << "cuda available:     " << (kiln::cuda::is_available() ? "yes" : "no") << "\n";
  for (const std::string& line : kiln::load_device_backends())
    std::cout << "device backend:     " << line << "\n";
  return 0;
}

// `kiln inspect program.kpt`: an exported program's signature, constraints and op counts.
int inspect(int argc, char** argv) {
  if (argc != 1) {
    std::cerr << "usage: kiln inspect PROGRAM.kpt\n";
    return 2;
  }
  try {
    const kiln::ExportedProgram p = kiln::load_program(argv[0]);
    const std::string text = p.str();
    std::cout << text.substr(0, text.find("Graph:\n")) << "ops:\n";
    for (const auto& [name, count] : p.op_counts())
      std::printf("  %-24s %d\n", name.c_str(), count);
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

// `kiln export --onnx PROGRAM.kpt OUT.onnx`: an exported program as an ONNX model.
int export_onnx(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[0], "--onnx") != 0) {
    std::cerr << "usage: kiln export --onnx PROGRAM.kpt OUT.onnx\n";
    return 2;
  }
  try {
    kiln::onnx::save(kiln::load_program(argv[1]), argv[2]);
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

// `kiln aot PROGRAM.kpt -o MODEL.so [--isa LEVEL] [--keep DIR]`: a program built into a shared
// library with the C interface of kiln/export/kiln_model.h.
int aot(int argc, char** argv) {
  const char* usage =
      "usage: kiln aot PROGRAM.kpt -o MODEL.so [--isa avx2|avx512|avx512_bf16] [--keep DIR]\n";
  std::string program, output;
  kiln::AotOptions options;
  for (int i = 0; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "-o") == 0 && has_value) {
      output = argv[++i];
    } else if (std::strcmp(argv[i], "--isa") == 0 && has_value) {
      options.isa = kiln::cpu::parse_cpu_capability(argv[++i]);
      if (!options.isa) {
        std::cerr << "kiln aot: unknown --isa " << argv[i] << "\n" << usage;
        return 2;
      }
    } else if (std::strcmp(argv[i], "--keep") == 0 && has_value) {
      options.work_dir = argv[++i];
    } else if (program.empty() && argv[i][0] != '-') {
      program = argv[i];
    } else {
      std::cerr << usage;
      return 2;
    }
  }
  if (program.empty() || output.empty()) {
    std::cerr << usage;
    return 2;
  }
  try {
    const int units = kiln::aot_compile(kiln::load_program(program), output, options);
    std::cout << "wrote " << output << " (" << units << " generated kernel units)\n";
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "info") == 0) return info();
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) return kiln::cli::run(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "fr") == 0) return kiln::cli::fr(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "inspect") == 0) return inspect(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "export") == 0) return export_onnx(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "aot") == 0) return aot(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "ops") == 0) {
    bool json = argc >= 3 && std::strcmp(argv[2], "--json") == 0;
    kiln::load_device_backends();  // their kernels fill the device columns
    auto ops = kiln::all_ops();
    if (json) std::cout << "[";
    bool first = true;
    for (const kiln::OpDef* op : ops) {
      bool cpu = op->has_kernel(kiln::kCPU) || op->is_view;
      bool cuda = op->has_kernel(kiln::kCUDA);
      if (json) {
        std::cout << (first ? "" : ",") << "\n  {\"name\": \"" << op->name
                  << "\", \"meta\": " << (op->meta_ ? "true" : "false")
                  << ", \"cpu\": " << (cpu ? "true" : "false")
                  << ", \"cuda\": " << (cuda ? "true" : "false")
                  << ", \"backward\": " << (op->differentiable() ? "true" : "false")
                  << ", \"jvp\": " << (has_jvp(*op) ? "true" : "false") << ", \"vmap\": \""
                  << vmap_rule(*op) << "\""
                  << ", \"lowering\": " << (op->lowering_.empty() ? "false" : "true") << "}";
      } else {
        if (first)
          std::cout << "op                        meta cpu cuda backward jvp vmap      lowering\n";
        auto yn = [](bool b) { return b ? "yes" : " - "; };
        std::printf("%-26s %s  %s %s  %s      %s %-9s %s\n", op->name.c_str(), yn(bool(op->meta_)),
                    yn(cpu), yn(cuda), yn(op->differentiable()), yn(has_jvp(*op)), vmap_rule(*op),
                    yn(!op->lowering_.empty()));
      }
      first = false;
    }
    if (json)
      std::cout << "\n]\n";
    else
      std::cout << ops.size() << " ops\n";
    return 0;
  }
  std::cerr
      << "usage: kiln ops [--json] | kiln info | kiln run [-n N] PROGRAM [ARGS...] | kiln fr DIR | "
         "kiln inspect PROGRAM.kpt | kiln export --onnx PROGRAM.kpt OUT.onnx | kiln aot "
         "PROGRAM.kpt "
         "-o MODEL.so\n";
  return 2;
}
