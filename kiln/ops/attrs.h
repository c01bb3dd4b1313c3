#pragma once
// Attrs: the non-tensor arguments of an op call (dims, sizes, scalars, flags), positional in the
// order of the op's schema. Modes and the recorder see them as data; kernels read them typed.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/core/array_ref.h"
#include "kiln/core/device.h"
#include "kiln/core/error.h"
#include "kiln/core/scalar.h"

namespace kiln {

class Generator;
using AttrValue = std::variant<std::monostate, bool, int64_t, double, Scalar, SymInt, SymShape,
                               std::vector<int64_t>, std::string, ScalarType, Device, Generator*>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<AttrValue> v) : v_(v) {}
  explicit Attrs(std::vector<AttrValue> v) : v_(std::move(v)) {}

  size_t size() const { return v_.size(); }
  const AttrValue& operator[](size_t i) const { return at(i); }
  bool is_none(size_t i) const { return i >= v_.size() || std::holds_alternative<std::monostate>(v_[i]); }

  bool b(size_t i) const { return get<bool>(i); }
  int64_t i(size_t i) const;
  double f(size_t i) const;  // accepts int64 and Scalar too
  Scalar scalar(size_t i) const;
  SymInt sym(size_t i) const;  // accepts int64 too
  const SymShape& shape(size_t i) const { return get<SymShape>(i); }
  const std::vector<int64_t>& ints(size_t i) const { return get<std::vector<int64_t>>(i); }
  const std::string& str(size_t i) const { return get<std::string>(i); }
  ScalarType dtype(size_t i) const { return get<ScalarType>(i); }
  Device device(size_t i) const { return get<Device>(i); }
  Generator* generator(size_t i) const { return is_none(i) ? nullptr : get<Generator*>(i); }

  std::optional<int64_t> opt_i(size_t k) const { return is_none(k) ? std::nullopt : std::optional(i(k)); }
  std::optional<double> opt_f(size_t k) const { return is_none(k) ? std::nullopt : std::optional(f(k)); }
  std::optional<ScalarType> opt_dtype(size_t k) const {
    return is_none(k) ? std::nullopt : std::optional(dtype(k));
  }
  std::string to_string() const;

 private:
  const AttrValue& at(size_t i) const {
    KILN_CHECK(i < v_.size(), "Attrs: attribute ", i, " missing (", v_.size(), " given)");
    return v_[i];
  }
  template <class T>
  const T& get(size_t i) const {
    const T* p = std::get_if<T>(&at(i));
    KILN_CHECK(p != nullptr, "Attrs: attribute ", i, " has an unexpected type");
    return *p;
  }
  std::vector<AttrValue> v_;
};

// Helpers that turn optional C++ arguments into attributes.
template <class T>
AttrValue opt_attr(const std::optional<T>& v) {
  if (!v) return std::monostate{};
  return *v;
}
inline std::vector<int64_t> to_vec(IntArrayRef r) { return r.vec(); }

}  // namespace kiln
