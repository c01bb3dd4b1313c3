// libkiln's side of kiln_model.h (aot_library.h): a model library's kiln_model_* functions call
// these.
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compile/codegen/prebuilt_kernels.h"
#include "kiln/core/grad_mode.h"
#include "kiln/export/aot_library.h"
#include "kiln/export/aot_warmup.h"
#include "kiln/ops/creation.h"

struct KilnModel {
  struct Info {
    int32_t dtype = 0;
    std::vector<int64_t> sizes, min, max;
  };
  KilnModel(std::unique_ptr<kiln::compiler::PrebuiltKernels> k, kiln::ExportedProgram p)
      : kernels(std::move(k)), program(std::move(p)) {}
  std::unique_ptr<kiln::compiler::PrebuiltKernels> kernels;
  kiln::ExportedProgram program;
  std::vector<Info> inputs, outputs;  // an output that is None has dtype -1
};

struct KilnResult {
  std::vector<kiln::Tensor> outputs;  // contiguous
};

namespace {

using kiln::compiler::PrebuiltKernels;
using kiln::cpu::CpuCapability;

thread_local std::string last_error;

// Runs f, turning an exception into a non-zero return and kiln_last_error's message.
template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "kiln: unknown error";
  }
  return 1;
}

std::unique_ptr<PrebuiltKernels> kernels_of(const KilnAotLibrary& lib) {
  KILN_CHECK(lib.abi_version == KILN_AOT_ABI_VERSION,
             "kiln_model_create: the model library was built for interface version ",
             lib.abi_version, " and this libkiln has version ", KILN_AOT_ABI_VERSION,
             "; rebuild it with this Kiln's `kiln aot`");
  KILN_CHECK(std::strcmp(lib.kiln_version, KILN_VERSION_STRING) == 0,
             "kiln_model_create: the model library was built by Kiln ", lib.kiln_version,
             " and this libkiln is Kiln ", KILN_VERSION_STRING,
             "; rebuild it with this Kiln's `kiln aot`");
  KILN_CHECK(lib.isa >= 0 && lib.isa <= static_cast<int>(CpuCapability::Avx512Bf16),
             "kiln_model_create: unknown instruction set level ", lib.isa);
  const auto isa = static_cast<CpuCapability>(lib.isa);
  KILN_CHECK(isa <= kiln::cpu::max_cpu_capability(), "kiln_model_create: the model's kernels use ",
             kiln::cpu::to_string(isa), " and this CPU supports up to ",
             kiln::cpu::to_string(kiln::cpu::max_cpu_capability()),
             "; build the library with `kiln aot --isa ",
             kiln::cpu::to_string(kiln::cpu::max_cpu_capability()), "`");
  auto kernels = std::make_unique<PrebuiltKernels>(isa);
  for (int64_t u = 0; u < lib.num_units; ++u) {
    const KilnAotUnit& unit = lib.units[u];
    kernels->add(unit.key,
                 std::vector<KilnKernelFn>(unit.kernels, unit.kernels + unit.num_kernels));
  }
  return kernels;
}

// A value's dims: fixed sizes, or -1 with the range the expression takes with every symbol at
// its min, and at its max (a max beyond int64 is INT64_MAX).
KilnModel::Info info_of(const kiln::ExportedProgram& p, const kiln::compiler::Value& v) {
  KilnModel::Info info;
  info.dtype = static_cast<int32_t>(v.dtype);
  const kiln::ShapeEnv& env = p.shape_env();
  std::vector<int64_t> lo, hi;
  for (int k = 0; k < env.num_symbols(); ++k) {
    lo.push_back(env.range(k).min);
    hi.push_back(env.range(k).max);
  }
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  auto at = [](const kiln::SymInt& s, const std::vector<int64_t>& values) {
    try {
      return s.evaluate(values);
    } catch (const kiln::OverflowError&) {
      return kUnbounded;
    }
  };
  for (const kiln::SymInt& s : v.sizes) {
    const auto fixed = s.maybe_int();
    const int64_t a = fixed ? *fixed : at(s, lo), b = fixed ? *fixed : at(s, hi);
    info.sizes.push_back(fixed ? *fixed : -1);
    info.min.push_back(std::min(a, b));
    info.max.push_back(std::max(a, b));
  }
  return info;
}

int fill(const std::vector<KilnModel::Info>& infos, size_t i, KilnTensorInfo* out,
         const char* what) {
  return guarded([&] {
    KILN_CHECK(out != nullptr, "kiln_model_", what, "_info: info is null");
    KILN_CHECK(i < infos.size(), "kiln_model_", what, "_info: the model has ", infos.size(), " ",
               what, "s; index ", i, " is out of range");
    const KilnModel::Info& info = infos[i];
    *out = {info.dtype, static_cast<int32_t>(info.sizes.size()), info.sizes.data(), info.min.data(),
            info.max.data()};
  });
}

}  // namespace

extern "C" {

int kiln_aot_create(const KilnAotLibrary* library, KilnModel** model) {
  return guarded([&] {
    KILN_CHECK(library != nullptr && model != nullptr, "kiln_model_create: a null argument");
    *model = nullptr;
    auto m = std::make_unique<KilnModel>(
        kernels_of(*library),
        kiln::load_program_from_bytes(library->program, library->program_size, "model library"));
    {
      const kiln::compiler::PrebuiltKernelsScope scope(*m->kernels);
      m->program = kiln::aot_detail::compile_and_warm_up(std::move(m->program));
    }
    const kiln::compiler::Graph& g = m->program.graph();
    for (int id : g.inputs) m->inputs.push_back(info_of(m->program, g.values[id]));
    for (int id : g.outputs)
      m->outputs.push_back(id >= 0 ? info_of(m->program, g.values[id])
                                   : KilnModel::Info{-1, {}, {}, {}});
    *model = m.release();
  });
}

void kiln_aot_destroy(KilnModel* model) { delete model; }

const char* kiln_aot_last_error(void) { return last_error.c_str(); }

size_t kiln_aot_num_inputs(const KilnModel* model) { return model ? model->inputs.size() : 0; }

size_t kiln_aot_num_outputs(const KilnModel* model) { return model ? model->outputs.size() : 0; }

int kiln_aot_input_info(const KilnModel* model, size_t i, KilnTensorInfo* info) {
  static const std::vector<KilnModel::Info> none;
  return fill(model ? model->inputs : none, i, info, "input");
}

int kiln_aot_output_info(const KilnModel* model, size_t i, KilnTensorInfo* info) {
  static const std::vector<KilnModel::Info> none;
  return fill(model ? model->outputs : none, i, info, "output");
}

int kiln_aot_run(KilnModel* model, const KilnTensor* inputs, size_t n_inputs, KilnResult** result) {
  return guarded([&] {
    KILN_CHECK(model != nullptr && result != nullptr && (inputs != nullptr || n_inputs == 0),
               "kiln_model_run: a null argument");
    *result = nullptr;
    std::vector<kiln::Tensor> args;
    for (size_t i = 0; i < n_inputs; ++i) {
      const KilnTensor& t = inputs[i];
      KILN_CHECK(t.dtype >= 0 && t.dtype < kiln::kNumScalarTypes, "kiln_model_run: inputs[", i,
                 "] has the unknown dtype ", t.dtype);
      KILN_CHECK(t.ndim >= 0 && (t.sizes != nullptr || t.ndim == 0), "kiln_model_run: inputs[", i,
                 "] has ", t.ndim, " dims and sizes ", t.sizes ? "set" : "null");
      const std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim);
      for (int64_t s : sizes)
        KILN_CHECK(s >= 0, "kiln_model_run: inputs[", i,
                   "] has a negative size: ", kiln::IntArrayRef(sizes));
      args.push_back(kiln::from_blob(t.data, sizes,
                                     kiln::TensorOptions(static_cast<kiln::ScalarType>(t.dtype))));
    }
    auto r = std::make_unique<KilnResult>();
    {
      const kiln::NoGradGuard no_grad;
      const kiln::compiler::PrebuiltKernelsScope scope(*model->kernels);
      for (kiln::Tensor& out : model->program.run(args))
        r->outputs.push_back(out.defined() ? out.contiguous() : out);
    }
    *result = r.release();
  });
}

size_t kiln_aot_result_num_outputs(const KilnResult* result) {
  return result ? result->outputs.size() : 0;
}

int kiln_aot_result_output(const KilnResult* result, size_t i, KilnTensor* output) {
  return guarded([&] {
    KILN_CHECK(result != nullptr && output != nullptr, "kiln_result_output: a null argument");
    KILN_CHECK(i < result->outputs.size(), "kiln_result_output: the result has ",
               result->outputs.size(), " outputs; index ", i, " is out of range");
    const kiln::Tensor& t = result->outputs[i];
    if (!t.defined()) {
      *output = {nullptr, -1, 0, nullptr};
      return;
    }
    *output = {t.data_ptr(), static_cast<int32_t>(t.dtype()), static_cast<int32_t>(t.dim()),
               t.sizes().data()};
  });
}

void kiln_aot_result_destroy(KilnResult* result) { delete result; }

}  // extern "C"
