// `std::cout << t` in libtorch's C++ format (at::print): bare columns of numbers in one format
// chosen for the whole block, a "<scale> *" line where values are scaled, "(i,j,.,.) = " headers
// for the matrices of higher-dimensional tensors, and a closing "[ CPUFloatType{2,3} ]" line.
// Kiln's Python-style repr is kiln::repr (print.cpp).
#include <cmath>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <vector>

#include "kiln/core/grad_mode.h"
#include "kiln/core/print.h"

namespace kiln {
namespace {

// Restores the stream's number formatting when the printer is done.
class FormatRestorer {
 public:
  explicit FormatRestorer(std::ostream& os) : os_(os), saved_(nullptr) { saved_.copyfmt(os); }
  ~FormatRestorer() { os_.copyfmt(saved_); }

 private:
  std::ostream& os_;
  std::ios saved_;
};

struct ColumnFormat {
  double scale = 1;   // every value is divided by it ("<scale> *" line above the block)
  int64_t width = 0;  // characters per value
};

// Digits before the decimal point of |x| (1 for 0).
double integer_digits(double x) { return x != 0 ? std::floor(std::log10(x)) + 1 : 1; }

// libtorch's choice of format for a block of values, from all of them (there is no
// summarisation): integers as integers (%g style), scientific when the magnitudes differ by
// more than 4 orders, else fixed with 4 decimals, scaled by a power of ten when the values are
// large or small. It sets the stream's float field and precision to match.
ColumnFormat choose_format(std::ostream& os, const double* v, int64_t n) {
  if (n == 0) return {1, 0};
  bool integral = true;
  for (int64_t i = 0; i < n && integral; ++i)
    if (std::isfinite(v[i]) && v[i] != std::ceil(v[i])) integral = false;
  int64_t first = 0;
  while (first < n && !std::isfinite(v[first])) ++first;
  double digits_min = 1, digits_max = 1;
  if (first < n) {
    double smallest = std::fabs(v[first]), largest = smallest;
    for (int64_t i = first; i < n; ++i) {
      const double z = std::fabs(v[i]);
      if (!std::isfinite(z)) continue;
      smallest = std::min(smallest, z);
      if (v[i] > largest) largest = z;  // libtorch compares the signed value here
    }
    digits_min = integer_digits(smallest);
    digits_max = integer_digits(largest);
  }
  ColumnFormat f;
  if (integral) {
    if (digits_max > 9) {
      f.width = 11;
      os << std::scientific << std::setprecision(4);
    } else {
      f.width = static_cast<int64_t>(digits_max) + 1;
      os << std::defaultfloat;
    }
  } else if (digits_max - digits_min > 4) {
    f.width = std::fabs(digits_max) > 99 || std::fabs(digits_min) > 99 ? 12 : 11;
    os << std::scientific << std::setprecision(4);
  } else {
    if (digits_max > 5 || digits_max < 0) {
      f.width = 7;
      f.scale = std::pow(10, digits_max - 1);
    } else {
      f.width = digits_max == 0 ? 7 : static_cast<int64_t>(digits_max) + 6;
    }
    os << std::fixed << std::setprecision(4);
  }
  return f;
}

void write_scale(std::ostream& os, double scale) {
  FormatRestorer restore(os);
  os << std::defaultfloat << scale << " *\n";
}

void write_indent(std::ostream& os, int64_t indent) { os << std::string(indent, ' '); }

// A rows x cols row-major block, split into "Columns a to b" groups when wider than linesize.
void write_matrix(std::ostream& os, const double* v, int64_t rows, int64_t cols, int64_t linesize,
                  int64_t indent) {
  const ColumnFormat f = choose_format(os, v, rows * cols);
  write_indent(os, indent);
  const int64_t per_line = (linesize - indent) / (f.width + 1);
  for (int64_t first = 0; first < cols;) {
    const int64_t last = std::min(first + per_line, cols) - 1;
    if (per_line < cols) {
      if (first != 0) os << '\n';
      os << "Columns " << first + 1 << " to " << last + 1;
      write_indent(os, indent);
    }
    if (f.scale != 1) {
      write_scale(os, f.scale);
      write_indent(os, indent);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = first; c <= last; ++c) {
        os << std::setw(static_cast<int>(f.width)) << v[r * cols + c] / f.scale;
        if (c != last) {
          os << ' ';
          continue;
        }
        os << '\n';
        if (r != rows - 1) write_indent(os, f.scale != 1 ? indent + 1 : indent);
      }
    }
    first = last + 1;
  }
}

// N >= 3 dimensions: the trailing matrices, headed "(i,j,.,.) = ", the first index varying
// fastest (as libtorch orders them); each matrix chooses its own format.
void write_slices(std::ostream& os, const double* v, IntArrayRef sizes, int64_t linesize) {
  const size_t lead = sizes.size() - 2;
  const int64_t rows = sizes[lead], cols = sizes[lead + 1];
  std::vector<int64_t> index(lead, 0), stride(lead, rows * cols);
  for (size_t d = lead - 1; d-- > 0;) stride[d] = stride[d + 1] * sizes[d + 1];
  for (bool first = true;; first = false) {
    if (!first) os << '\n';
    os << '(';
    int64_t offset = 0;
    for (size_t d = 0; d < lead; ++d) {
      os << index[d] + 1 << ',';
      offset += index[d] * stride[d];
    }
    os << ".,.) = \n";
    write_matrix(os, v + offset, rows, cols, linesize, 1);
    size_t d = 0;
    while (d < lead && ++index[d] == sizes[d]) index[d++] = 0;
    if (d == lead) break;
  }
}

void write_type_line(std::ostream& os, const Tensor& t) {
  os << "[ " << t.toString() << '{';
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? "," : "") << t.size(d);
  os << "} ]";
}

}  // namespace

std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize) {
  FormatRestorer restore(os);
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  if (t.layout() == Layout::SparseCsr) {
    os << "[ " << t.toString() << "{}\ncrow_indices:\n"
       << t.crow_indices() << "\ncol_indices:\n"
       << t.col_indices() << "\nvalues:\n"
       << t.values() << "\nsize:\n"
       << t.sizes() << "\n]";
    return os;
  }
  if (t.impl()->is_traced()) detail::throw_traced_print();
  if (!t.is_meta() && t.numel() > 0) {
    NoGradGuard no_grad;
    const Tensor host = t.detach().cpu().to(kFloat64).contiguous();
    const double* v = host.data_ptr<double>();
    if (t.dim() == 0) {
      os << std::defaultfloat << v[0] << '\n';
    } else if (t.dim() == 1) {
      const ColumnFormat f = choose_format(os, v, t.numel());
      if (f.scale != 1) write_scale(os, f.scale);
      for (int64_t i = 0; i < t.numel(); ++i)
        os << std::setw(static_cast<int>(f.width)) << v[i] / f.scale << '\n';
    } else if (t.dim() == 2) {
      write_matrix(os, v, t.size(0), t.size(1), linesize, 0);
    } else {
      write_slices(os, v, t.sizes(), linesize);
    }
  }
  write_type_line(os, t);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return print(os, t, 80); }

void Tensor::print() const {
  if (defined()) {
    std::cerr << '[' << toString() << ' ' << sizes() << "]\n";
  } else {
    std::cerr << "[UndefinedTensor]\n";
  }
}

}  // namespace kiln
