#include "kiln/ops/attrs.h"

#include <sstream>

namespace kiln {

int64_t Attrs::i(size_t k) const {
  const AttrValue& v = at(k);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  if (auto p = std::get_if<SymInt>(&v)) return p->guard_int();
  if (auto p = std::get_if<bool>(&v)) return *p;
  KILN_FAIL("Attrs: attribute ", k, " is not an integer");
}

double Attrs::f(size_t k) const {
  const AttrValue& v = at(k);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  if (auto p = std::get_if<Scalar>(&v)) return p->to_double();
  KILN_FAIL("Attrs: attribute ", k, " is not a number");
}

Scalar Attrs::scalar(size_t k) const {
  const AttrValue& v = at(k);
  if (auto p = std::get_if<Scalar>(&v)) return *p;
  if (auto p = std::get_if<double>(&v)) return Scalar(*p);
  if (auto p = std::get_if<int64_t>(&v)) return Scalar(*p);
  if (auto p = std::get_if<bool>(&v)) return Scalar(*p);
  KILN_FAIL("Attrs: attribute ", k, " is not a scalar");
}

SymInt Attrs::sym(size_t k) const {
  const AttrValue& v = at(k);
  if (auto p = std::get_if<SymInt>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return SymInt(*p);
  KILN_FAIL("Attrs: attribute ", k, " is not a size");
}

std::string Attrs::to_string() const {
  std::ostringstream os;
  for (size_t k = 0; k < v_.size(); ++k) {
    if (k) os << ", ";
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::monostate>) os << "None";
          else if constexpr (std::is_same_v<T, bool>) os << (x ? "True" : "False");
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) os << IntArrayRef(x);
          else if constexpr (std::is_same_v<T, SymShape>) os << SymIntArrayRef(x);
          else if constexpr (std::is_same_v<T, std::string>) os << '"' << x << '"';
          else if constexpr (std::is_same_v<T, Generator*>) os << (x ? "<generator>" : "None");
          else os << x;
        },
        v_[k]);
  }
  return os.str();
}

}  // namespace kiln
