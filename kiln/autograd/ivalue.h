#pragma once
// IValue: a small tagged value for AutogradContext::saved_data (libtorch's name and accessors).
#include <string>
#include <variant>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/core/tensor.h"

namespace kiln {

class IValue {
 public:
  IValue() = default;
  IValue(const Tensor& t) : v_(t) {}                    // NOLINT
  IValue(double d) : v_(d) {}                           // NOLINT
  IValue(int64_t i) : v_(i) {}                          // NOLINT
  IValue(int i) : v_(static_cast<int64_t>(i)) {}        // NOLINT
  IValue(bool b) : v_(b) {}                             // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}           // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}         // NOLINT
  IValue(std::vector<int64_t> l) : v_(std::move(l)) {}  // NOLINT
  IValue(const Scalar& s) {                             // NOLINT
    if (s.is_floating_point())
      v_ = s.to_double();
    else if (s.is_bool())
      v_ = s.to<bool>();
    else
      v_ = s.to_long();
  }

  bool isNone() const { return v_.index() == 0; }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isString() const { return std::holds_alternative<std::string>(v_); }
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  double toDouble() const {
    if (isInt()) return static_cast<double>(std::get<int64_t>(v_));
    return get<double>("double");
  }
  int64_t toInt() const { return get<int64_t>("int"); }
  bool toBool() const { return get<bool>("bool"); }
  const std::string& toStringRef() const { return get<std::string>("string"); }
  std::vector<int64_t> toIntVector() const { return get<std::vector<int64_t>>("int list"); }

 private:
  template <class T>
  const T& get(const char* what) const {
    const T* p = std::get_if<T>(&v_);
    KILN_CHECK(p != nullptr, "IValue: expected a ", what);
    return *p;
  }
  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>> v_;
};

}  // namespace kiln
