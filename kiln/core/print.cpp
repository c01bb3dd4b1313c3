#include "kiln/core/print.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <vector>

#include "kiln/core/autograd_meta.h"

namespace kiln {

namespace {
NodeNameFn g_node_name = nullptr;
}  // namespace
void set_node_name_fn(NodeNameFn fn) { g_node_name = fn; }
std::string node_name(const autograd::Node& node) {
  return g_node_name ? g_node_name(node) : "Node";
}

namespace {

std::mutex g_options_mu;
PrintOptions g_options;

// One element as read from memory: floats as double, integers as int64, bools as 0/1.
struct Value {
  double f = 0;
  int64_t i = 0;
};

enum class Kind { Floating, Integer, Bool };

std::string printf_string(const char* fmt, int precision, double v) {
  const int n = std::snprintf(nullptr, 0, fmt, precision, v);
  std::string s(static_cast<size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, precision, v);
  return s;
}

// Python's "{:.Nf}" / "{:.Ne}" (NaN prints as "nan" whatever its sign bit).
std::string format_fixed(double v, int precision) {
  if (std::isnan(v)) return "nan";
  return printf_string("%.*f", precision, v);
}
std::string format_sci(double v, int precision) {
  if (std::isnan(v)) return "nan";
  return printf_string("%.*e", precision, v);
}

// PyTorch's _Formatter: one number format and width for all elements that are shown.
class Formatter {
 public:
  Formatter(Kind kind, const std::vector<Value>& shown, const PrintOptions& o)
      : kind_(kind), precision_(o.precision) {
    if (kind != Kind::Floating) {
      for (const Value& v : shown) width_ = std::max(width_, str(v).size());
      return;
    }
    std::vector<double> nz;  // nonzero finite values decide the format
    for (const Value& v : shown)
      if (std::isfinite(v.f) && v.f != 0) nz.push_back(v.f);
    if (!nz.empty()) choose_float_format(nz);
    if (o.sci_mode) sci_ = *o.sci_mode;
  }

  size_t width() const { return width_; }

  std::string format(const Value& v) const {
    std::string s;
    if (kind_ != Kind::Floating) {
      s = str(v);
    } else if (sci_) {
      s = format_sci(v.f, precision_);
    } else if (int_mode_) {
      s = format_fixed(v.f, 0);
      if (std::isfinite(v.f)) s += ".";
    } else {
      s = format_fixed(v.f, precision_);
    }
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }

 private:
  void choose_float_format(const std::vector<double>& nz) {
    double lo = INFINITY, hi = 0;
    for (double v : nz) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : nz) {
      size_t len;
      if (sci_)
        len = format_sci(v, precision_).size();
      else if (int_mode_)
        len = format_fixed(v, 0).size() + 1;
      else
        len = format_fixed(v, precision_).size();
      width_ = std::max(width_, len);
    }
  }
  std::string str(const Value& v) const {
    if (kind_ == Kind::Bool) return v.i ? "True" : "False";
    return std::to_string(v.i);
  }

  Kind kind_;
  int precision_;
  bool int_mode_ = true;
  bool sci_ = false;
  size_t width_ = 1;
};

// Walks a (CPU, materialised) tensor the way _tensor_str does.
class Printer {
 public:
  Printer(const Tensor& t, const PrintOptions& o)
      : opts_(o),
        base_(static_cast<const char*>(t.impl()->data())),
        dtype_(t.dtype()),
        kind_(is_floating_point(t.dtype()) ? Kind::Floating
              : t.dtype() == kBool         ? Kind::Bool
                                           : Kind::Integer),
        sizes_(t.sym_sizes().vec()),
        strides_(t.sym_strides().vec()),
        summarize_(t.sym_numel().guard_int() > o.threshold) {}

  std::string body(int indent) {
    std::vector<Value> shown;
    collect(0, 0, shown);
    Formatter f(kind_, shown, opts_);
    return str(0, 0, indent, f);
  }

 private:
  // Indices shown along a dimension of `size`; -1 stands for the "..." between the edges.
  std::vector<int64_t> shown(int64_t size) const {
    std::vector<int64_t> idx;
    const int64_t edge = opts_.edgeitems;
    if (summarize_ && size > 2 * edge) {
      for (int64_t i = 0; i < edge; ++i) idx.push_back(i);
      idx.push_back(-1);
      for (int64_t i = size - edge; i < size; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < size; ++i) idx.push_back(i);
    }
    return idx;
  }

  Value at(int64_t offset) const {
    Value v;
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      const T x = reinterpret_cast<const T*>(base_)[offset];
      if constexpr (std::is_floating_point_v<T>)
        v.f = static_cast<double>(x);
      else if constexpr (std::is_integral_v<T>)
        v.i = static_cast<int64_t>(x);
      else
        v.f = static_cast<double>(static_cast<float>(x));  // Half, BFloat16
    });
    return v;
  }

  void collect(size_t d, int64_t offset, std::vector<Value>& out) const {
    if (d == sizes_.size()) {
      out.push_back(at(offset));
      return;
    }
    for (int64_t i : shown(sizes_[d]))
      if (i >= 0) collect(d + 1, offset + i * strides_[d], out);
  }

  std::string str(size_t d, int64_t offset, int indent, const Formatter& f) const {
    const size_t nd = sizes_.size();
    if (nd == 0) return f.format(at(offset));
    std::vector<std::string> parts;
    if (d + 1 == nd) {
      for (int64_t i : shown(sizes_[d]))
        parts.push_back(i < 0 ? " ..." : f.format(at(offset + i * strides_[d])));
      const auto element_length = static_cast<int64_t>(f.width()) + 2;
      const int64_t per_line = std::max<int64_t>(
          1, static_cast<int64_t>(std::floor(static_cast<double>(opts_.linewidth - indent) /
                                             static_cast<double>(element_length))));
      std::string out = "[";
      for (size_t k = 0; k < parts.size(); ++k) {
        if (k > 0) out += k % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
        out += parts[k];
      }
      return out + "]";
    }
    for (int64_t i : shown(sizes_[d]))
      parts.push_back(i < 0 ? "..." : str(d + 1, offset + i * strides_[d], indent + 1, f));
    const std::string sep = "," + std::string(nd - d - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    for (size_t k = 0; k < parts.size(); ++k) out += (k ? sep : "") + parts[k];
    return out + "]";
  }

  const PrintOptions& opts_;
  const char* base_;
  ScalarType dtype_;
  Kind kind_;
  std::vector<int64_t> sizes_, strides_;
  bool summarize_;
};

std::string size_tuple(const Tensor& t) {
  std::ostringstream os;
  os << "(";
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.sym_sizes()[d];
  if (t.dim() == 1) os << ",";
  os << ")";
  return os.str();
}

std::string dtype_str(ScalarType t) { return "kiln." + std::string(dtype_name(t)); }

// PyTorch prints the device unless it is the default device (and, for CUDA, its index).
std::optional<std::string> device_suffix(const Tensor& t) {
  if (t.is_meta()) return "device='meta'";
  const Device d = t.device(), def = default_device();
  const int index = d.index() < 0 ? 0 : d.index(), def_index = def.index() < 0 ? 0 : def.index();
  const std::string name = d.is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
  if (d.type() != def.type() || (d.is_cuda() && index != def_index)) return "device='" + name + "'";
  return std::nullopt;
}

// _add_suffixes: ", suffix" on the last line while it fits in linewidth, else on a new line.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, int indent,
                         int linewidth) {
  const size_t nl = s.rfind('\n');
  int64_t last_line = static_cast<int64_t>(s.size()) -
                      (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    const auto len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > linewidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line = indent + len;
    } else {
      s += ", " + suffix;
      last_line += len + 2;
    }
  }
  return s + ")";
}

}  // namespace

void set_printoptions(const PrintOptions& options) {
  std::lock_guard<std::mutex> lock(g_options_mu);
  g_options = options;
}

PrintOptions get_printoptions() {
  std::lock_guard<std::mutex> lock(g_options_mu);
  return g_options;
}

void detail::throw_traced_print() {
  throw DataDependentError(
      "print: the tensor is a traced value, whose elements the trace does not have (see "
      "docs/compile.md)");
}

std::string repr(const Tensor& tensor) {
  if (!tensor.defined()) return "[ Tensor (undefined) ]";
  if (tensor.layout() == Layout::SparseCsr) {
    return "tensor(crow_indices=" + repr(tensor.crow_indices()) +
           ",\n       col_indices=" + repr(tensor.col_indices()) +
           ",\n       values=" + repr(tensor.values()) + ", size=" + size_tuple(tensor) +
           ", nnz=" + std::to_string(tensor.col_indices().sym_numel().guard_int()) +
           ", layout=kiln.sparse_csr)";
  }
  const PrintOptions opts = get_printoptions();
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (auto dev = device_suffix(tensor)) suffixes.push_back(*dev);

  const ScalarType dt = tensor.dtype();
  std::string body;
  if (tensor.impl()->is_traced()) detail::throw_traced_print();
  if (tensor.is_meta()) {
    suffixes.push_back("size=" + size_tuple(tensor));
    if (dt != get_default_dtype()) suffixes.push_back("dtype=" + dtype_str(dt));
    body = "...";
  } else if (tensor.sym_numel().guard_int() == 0) {
    if (tensor.dim() != 1) suffixes.push_back("size=" + size_tuple(tensor));
    if (dt != get_default_dtype()) suffixes.push_back("dtype=" + dtype_str(dt));
    body = "[]";
  } else {
    if (dt != get_default_dtype() && dt != kInt64 && dt != kBool)
      suffixes.push_back("dtype=" + dtype_str(dt));
    const Tensor host = tensor.is_cpu() ? tensor : tensor.detach().cpu();
    body = Printer(host, opts).body(indent);
  }

  if (const auto& fn = tensor.grad_fn()) {
    suffixes.push_back("grad_fn=<" + node_name(*fn) + ">");
  } else if (tensor.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  return add_suffixes(prefix + body, suffixes, indent, opts.linewidth);
}

}  // namespace kiln
