#include "kiln/backend/cuda/pointwise_source.h"

#include <sstream>

#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"

namespace kiln::cuda {
namespace {

using lowering::Expr;

// Elements per thread in kernels over at most one dim: enough that each thread has about
// kBytesInFlight of loads issued before it computes, between 4 and 16. On the H100 more only
// cost registers, so fewer threads stayed resident (bench/RESULTS-cuda.md, "Pointwise kernel
// variants": bfloat16 gelu at 4 per thread 122.6 us, at 8 125.0 us, at 16 133.9 us).
constexpr int kBytesInFlight = 8;

int unroll_for(size_t bytes_loaded_per_element) {
  int u = 4;
  while (u < 16 && static_cast<size_t>(u) * bytes_loaded_per_element < kBytesInFlight) u *= 2;
  return u;
}

using compiler::compute_type;
using compiler::convert;
using compiler::is_16bit;
using compiler::storage_type;

std::string scalar_slot(int slot) {
  return std::string("args.scalars[") + std::to_string(slot) + "]";
}

// Renders an expression; constants and parameters take consecutive scalar slots from `next`, in
// the order collect_constants visits them.
struct Renderer {
  const std::vector<ScalarType>& dtypes;
  int next;
  std::string suffix;      // of tensor inputs' variables: the element's slot in an unrolled loop
  std::vector<bool> host;  // inputs that are host scalars (one variable for every slot)

  std::string expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Input:
        return convert(
            std::string("x") + std::to_string(e.input) + (host.at(e.input) ? "" : suffix),
            dtypes.at(e.input), e.dtype);
      case Expr::Kind::Constant:
        return std::string("static_cast<") + compute_type(e.dtype) + ">(" + scalar_slot(next++) +
               ".f)";
      case Expr::Kind::Cast:
        return convert(expr(*e.args[0]), e.args[0]->dtype, e.dtype);
      case Expr::Kind::Call: {
        std::string s = "kiln::scalar::" + e.functor + "{";
        for (size_t i = 0; i < e.params.size(); ++i)
          s += (i ? ", " : "") + scalar_slot(next++) + ".f";
        s += "}(";
        for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr(*e.args[i]);
        return s + ")";
      }
    }
    return "";
  }
};

void collect_constants(const Expr& e, std::vector<double>& out) {
  if (e.kind == Expr::Kind::Constant) out.push_back(e.value);
  out.insert(out.end(), e.params.begin(), e.params.end());
  for (const auto& a : e.args) collect_constants(*a, out);
}

void structure(const Expr& e, std::ostream& os) {
  switch (e.kind) {
    case Expr::Kind::Input:
      os << e.dtype << "(in" << e.input << ")";
      return;
    case Expr::Kind::Constant:
      os << e.dtype << "(c)";
      return;
    case Expr::Kind::Cast:
    case Expr::Kind::Call:
      os << (e.kind == Expr::Kind::Cast ? std::string("cast") : e.functor) << "{" << e.params.size()
         << "}" << e.dtype << "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) os << ", ";
        structure(*e.args[i], os);
      }
      os << ")";
      return;
  }
}

void mark_read(const Expr& e, std::vector<bool>& read) {
  if (e.kind == Expr::Kind::Input) {
    KILN_CHECK(e.input >= 0 && static_cast<size_t>(e.input) < read.size(),
               "cuda: internal error: pointwise expression reads input ", e.input, " of ",
               read.size());
    read[e.input] = true;
  }
  for (const auto& a : e.args) mark_read(*a, read);
}

// The grid-stride loop over the output's elements, index type I: offsets o<k> of each tensor
// operand, then the loads, the expression and the store.
void emit_loop(std::ostream& os, const std::vector<int>& tensors, int ndim,
               const std::string& body) {
  os << "    const I n = static_cast<I>(args.numel);\n"
     << "    const I step = static_cast<I>(blockDim.x) * static_cast<I>(gridDim.x);\n"
     << "    for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + "
        "static_cast<I>(threadIdx.x); i < n; i += step) {\n";
  for (int k : tensors) os << "      int64_t o" << k << " = 0;\n";
  if (ndim > 1) os << "      I r = i;\n";
  for (int d = ndim - 1; d >= 0; --d) {
    os << "      {\n";
    if (d > 0) {
      os << "        const I size = static_cast<I>(args.sizes[" << d << "]);\n"
         << "        const I q = r / size;\n"
         << "        const int64_t x = static_cast<int64_t>(r - q * size);\n"
         << "        r = q;\n";
    } else {
      os << "        const int64_t x = static_cast<int64_t>(" << (ndim > 1 ? "r" : "i") << ");\n";
    }
    for (int k : tensors)
      os << "        o" << k << " += x * args.strides[" << k << "][" << d << "];\n";
    os << "      }\n";
  }
  os << body << "    }\n";
}

// The unrolled grid-stride loop of a kernel over at most one dim (pointwise_source).
void emit_unrolled_loop(std::ostream& os, int unroll, const std::string& body) {
  os << "    const I n = static_cast<I>(args.numel);\n"
     << "    const I block = static_cast<I>(blockDim.x);\n"
     << "    const I step = block * static_cast<I>(gridDim.x) * " << unroll << ";\n"
     << "    for (I base = static_cast<I>(blockIdx.x) * block * " << unroll
     << " + static_cast<I>(threadIdx.x); base < n; base += step) {\n"
     << body << "    }\n";
}

}  // namespace

std::vector<bool> inputs_read(const Expr& out, size_t n) {
  std::vector<bool> read(n, false);
  mark_read(out, read);
  return read;
}

std::vector<double> pointwise_constants(const Expr& out) {
  std::vector<double> c;
  collect_constants(out, c);
  return c;
}

std::string pointwise_structure(const Expr& out) {
  std::ostringstream os;
  structure(out, os);
  return os.str();
}

std::string pointwise_source(const Expr& out, const std::vector<ScalarType>& input_dtypes,
                             ScalarType output_dtype, int ndim, std::string kernel_name,
                             const std::vector<bool>& host_scalars, bool dense, int unroll) {
  KILN_CHECK(!dense || ndim <= 1, "cuda: internal error: a dense pointwise kernel over ", ndim,
             " dims");
  const size_t n = input_dtypes.size();
  KILN_CHECK(ndim >= 0 && ndim <= kMaxPointwiseDims, "cuda: pointwise kernels take 0 to ",
             kMaxPointwiseDims, " dims, not ", ndim);
  KILN_CHECK(host_scalars.empty() || host_scalars.size() == n,
             "cuda: internal error: ", host_scalars.size(), " host-scalar flags for ", n,
             " inputs");
  const std::vector<bool> read = inputs_read(out, n);
  auto is_host = [&](size_t k) { return !host_scalars.empty() && host_scalars[k]; };
  std::vector<bool> host(n);
  for (size_t k = 0; k < n; ++k) host[k] = is_host(k);

  // Host scalars come first among the scalars; tensor operands are indexed in memory (the
  // output and the tensor inputs the expression reads).
  std::vector<int> tensors = {0};
  std::string scalar_loads;
  int slot = 0;
  for (size_t k = 0; k < n; ++k) {
    if (is_host(k)) {
      const int s = slot++;
      if (!read[k]) continue;
      const ScalarType t = input_dtypes[k];
      scalar_loads += "      const " + std::string(compute_type(t)) + std::string(" x") +
                      std::to_string(k) + " = ";
      if (t == kBool)
        scalar_loads += scalar_slot(s) + ".i != 0;\n";
      else
        scalar_loads += std::string("static_cast<") + compute_type(t) + ">(" + scalar_slot(s) +
                        (is_floating_point(t) ? ".f" : ".i") + ");\n";
    } else if (read[k]) {
      tensors.push_back(static_cast<int>(k) + 1);
    }
  }
  // The loads of element `u` (suffix _u; "" outside an unrolled loop) into x<k>_u, and its
  // computation and store.
  auto tensor_loads = [&](const std::string& u, bool guarded) {
    std::string out;
    for (size_t k = 0; k < n; ++k) {
      if (is_host(k) || !read[k]) continue;
      const std::string t = compute_type(input_dtypes[k]), op = std::to_string(k + 1);
      const std::string load = "static_cast<" + t + ">(reinterpret_cast<const " +
                               storage_type(input_dtypes[k]) + "*>(args.data[" + op + "])[o" + op +
                               u + "])";
      if (guarded)
        out += "      " + t + std::string(" x") + std::to_string(k) + u + "{};\n      if (ok" + u +
               ") x" + std::to_string(k) + u + " = " + load + ";\n";
      else
        out +=
            "      const " + t + std::string(" x") + std::to_string(k) + u + " = " + load + ";\n";
    }
    return out;
  };
  int scalars = slot;
  auto compute_store = [&](const std::string& u) {
    Renderer r{input_dtypes, slot, u, host};
    const std::string v = convert(r.expr(out), out.dtype, output_dtype);
    scalars = r.next;
    return "      const " + std::string(compute_type(output_dtype)) + " y" + u + " = " + v +
           ";\n      reinterpret_cast<" + storage_type(output_dtype) + "*>(args.data[0])[o0" + u +
           "] = static_cast<" + storage_type(output_dtype) + ">(y" + u + ");\n";
  };
  const std::string body = scalar_loads + tensor_loads("", false) + compute_store("");

  std::ostringstream os;
  os << "#include \"kiln/backend/scalar.h\"\n\n"
     << "// " << pointwise_structure(out) << "\n"
     << "union ScalarArg {\n  double f;\n  int64_t i;\n};\n"
     << "struct TensorArgs {\n"
     << "  char* data[" << n + 1 << "];\n"
     << "  int64_t sizes[" << kMaxPointwiseDims << "];\n"
     << "  int64_t strides[" << n + 1 << "][" << kMaxPointwiseDims << "];\n"
     << "  int64_t numel;\n";
  if (scalars > 0) os << "  ScalarArg scalars[" << scalars << "];\n";
  os << "};\n\n"
     << "extern \"C\" __global__ void " << kernel_name << "(const TensorArgs args) {\n"
     << "  if (args.numel <= 0x7fffffff) {\n"
     << "    using I = unsigned int;\n";
  if (ndim <= 1) {
    // Contiguous or one strided dim: several elements per thread, all loaded before any is
    // computed, so each thread keeps several loads in flight (narrow dtypes need more of them
    // to reach the memory's bandwidth); consecutive threads still read consecutive elements.
    size_t loaded = 0;
    for (size_t k = 0; k < n; ++k)
      if (read[k] && !is_host(k)) loaded += element_size(input_dtypes[k]);
    if (unroll <= 0) unroll = unroll_for(loaded ? loaded : element_size(output_dtype));
    std::string unrolled = scalar_loads;
    for (int u = 0; u < unroll; ++u) {
      const std::string su = std::string("_") + std::to_string(u);
      unrolled += "      const I i" + su + std::string(" = base + ") + std::to_string(u) +
                  " * block;\n      const bool ok" + su + " = i" + su + " < n;\n";
      for (int k : tensors) {
        const std::string o = "o" + std::to_string(k) + su;
        if (dense)  // 32-bit offsets, no multiply: fewer registers, so more threads resident
          unrolled += "      const I " + o + " = i" + su + ";\n";
        else
          unrolled += "      const int64_t " + o + " = " +
                      (ndim == 1 ? "static_cast<int64_t>(i" + su + ") * args.strides[" +
                                       std::to_string(k) + "][0]"
                                 : std::string("0")) +
                      ";\n";
      }
    }
    for (int u = 0; u < unroll; ++u)
      unrolled += tensor_loads(std::string("_") + std::to_string(u), true);
    for (int u = 0; u < unroll; ++u) {
      const std::string su = std::string("_") + std::to_string(u);
      unrolled += "      if (ok" + su + ") {\n" + compute_store(su) + "      }\n";
    }
    emit_unrolled_loop(os, unroll, unrolled);
  } else {
    emit_loop(os, tensors, ndim, body);
  }
  os << "  } else {\n"
     << "    using I = int64_t;\n";
  emit_loop(os, tensors, ndim, body);
  os << "  }\n}\n";
  return os.str();
}

}  // namespace kiln::cuda
