// ONNX translations of the pointwise ops: activations, arithmetic, comparisons, where. Operands
// are cast to the dtype Kiln computed in (its output's, or the promoted one for comparisons),
// since ONNX's arithmetic wants one type and Kiln promotes (x * 2 multiplies by an int64 number).
#include <cmath>
#include <numbers>

#include "kiln/export/onnx_ops.h"

namespace kiln::onnx_detail {

namespace {

ScalarType out_dtype(const OpCall& c) { return c.output().dtype; }

// The dtype two operands compare in: PyTorch's promotion, where a number (x > 0) takes its
// category from the tensor unless it is floating and the tensor is not.
ScalarType compare_dtype(const OpCall& c, size_t a, size_t b) {
  const compiler::Value &x = c.input(a), &y = c.input(b);
  auto with_number = [](ScalarType tensor, ScalarType number) {
    return is_floating_point(number) && !is_floating_point(tensor) ? get_default_dtype() : tensor;
  };
  if (x.wrapped_number && !y.wrapped_number) return with_number(y.dtype, x.dtype);
  if (y.wrapped_number && !x.wrapped_number) return with_number(x.dtype, y.dtype);
  return promote_types(x.dtype, y.dtype);
}

// out = `type`(inputs cast to the output's dtype).
Translation same_type(std::string type, std::vector<NodeAttr> attrs = {}) {
  return [type, attrs](const OpCall& c) {
    std::vector<std::string> in;
    for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.in(i, out_dtype(c)));
    c.e.op_into({c.out()}, type, in, attrs);
  };
}

Translation compare(std::string type, bool negate = false) {
  return [type, negate](const OpCall& c) {
    const ScalarType t = compare_dtype(c, 0, 1);
    const std::vector<std::string> in{c.in(0, t), c.in(1, t)};
    if (negate) {
      c.e.op_into({c.out()}, "Not", {c.e.op(type, in)});
    } else {
      c.e.op_into({c.out()}, type, in);
    }
  };
}

Translation logical(std::string type) {
  return [type](const OpCall& c) {
    std::vector<std::string> in;
    for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.in(i, kBool));
    c.e.cast_into(c.out(), c.e.op(type, in), kBool, out_dtype(c));
  };
}

// A composition of ONNX ops on input 0 (cast to the output's dtype) written to the output:
// f(c, x, t) returns the result's name, t the dtype.
Translation compose(std::function<std::string(const OpCall&, const std::string&, ScalarType)> f) {
  return [f](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    c.e.op_into({c.out()}, "Identity", {f(c, c.in(0, t), t)});
  };
}

// 0.5 * x * (1 + erf(x / sqrt(2))), or the tanh approximation.
std::string gelu(const OpCall& c, const std::string& x, ScalarType t) {
  Emitter& e = c.e;
  std::string inner;
  if (c.attrs().str(0) == "tanh") {
    const std::string cube = e.op("Mul", {e.op("Mul", {x, x}), x});
    const std::string u = e.op("Add", {x, e.op("Mul", {cube, e.scalar(0.044715, t)})});
    inner = e.op("Tanh", {e.op("Mul", {u, e.scalar(std::sqrt(2.0 / std::numbers::pi), t)})});
  } else {
    inner = e.op("Erf", {e.op("Mul", {x, e.scalar(1.0 / std::numbers::sqrt2, t)})});
  }
  const std::string half_x = e.op("Mul", {x, e.scalar(0.5, t)});
  return e.op("Mul", {half_x, e.op("Add", {inner, e.scalar(1.0, t)})});
}

// softplus with PyTorch's beta and threshold: x where beta * x > threshold.
std::string softplus(const OpCall& c, const std::string& x, ScalarType t) {
  Emitter& e = c.e;
  const double beta = c.attrs().f(0), threshold = c.attrs().f(1);
  const std::string bx = e.op("Mul", {x, e.scalar(beta, t)});
  const std::string soft = e.op("Div", {e.op("Softplus", {bx}), e.scalar(beta, t)});
  return e.op("Where", {e.op("Greater", {bx, e.scalar(threshold, t)}), x, soft});
}

std::string trunc(Emitter& e, const std::string& x, ScalarType t) {
  const std::string negative = e.op("Less", {x, e.scalar(0, t)});
  return e.op("Where", {negative, e.op("Ceil", {x}), e.op("Floor", {x})});
}

// self + alpha * other (add, sub with "Sub").
Translation with_alpha(std::string type) {
  return [type](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    std::string other = c.in(1, t);
    const Scalar alpha = c.attrs().scalar(0);
    if (alpha.to_double() != 1.0) other = c.e.op("Mul", {other, c.e.scalar(alpha.to_double(), t)});
    c.e.op_into({c.out()}, type, {c.in(0, t), other});
  };
}

void div(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const std::string mode = c.attrs().is_none(0) ? "" : c.attrs().str(0);
  if (mode.empty() || (mode == "trunc" && !is_floating_point(t))) {
    e.op_into({c.out()}, "Div", {c.in(0, t), c.in(1, t)});
    return;
  }
  // Rounded division in a floating type, cast back for integers.
  const ScalarType f = is_floating_point(t) ? t : kFloat64;
  const std::string q = e.op("Div", {c.in(0, f), c.in(1, f)});
  const std::string r = mode == "floor" ? e.op("Floor", {q}) : trunc(e, q, f);
  e.cast_into(c.out(), r, f, t);
}

// Python's remainder: a - floor(a / b) * b for floats; Mod with fmod=0 for integers.
void remainder(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const std::string a = c.in(0, t), b = c.in(1, t);
  if (!is_floating_point(t)) {
    e.op_into({c.out()}, "Mod", {a, b}, {{"fmod", int64_t{0}}});
    return;
  }
  const std::string q = e.op("Floor", {e.op("Div", {a, b})});
  e.op_into({c.out()}, "Sub", {a, e.op("Mul", {q, b})});
}

// self + value * f(t1, t2) (addcmul with Mul, addcdiv with Div).
Translation addc(std::string type) {
  return [type](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    std::string p = c.e.op(type, {c.in(1, t), c.in(2, t)});
    const double value = c.attrs().f(0);
    if (value != 1.0) p = c.e.op("Mul", {p, c.e.scalar(value, t)});
    c.e.op_into({c.out()}, "Add", {c.in(0, t), p});
  };
}

void clamp(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  std::string x = c.in(0, t);
  if (c.has(1)) x = c.e.op("Max", {x, c.in(1, t)});
  if (c.has(2)) x = c.e.op("Min", {x, c.in(2, t)});
  c.e.op_into({c.out()}, "Identity", {x});
}

void elu(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  const double alpha = c.attrs().f(0), scale = c.attrs().f(1), input_scale = c.attrs().f(2);
  if (input_scale != 1.0) c.fail("input_scale ", input_scale, " has no ONNX counterpart");
  const std::string y = c.e.op("Elu", {c.in(0, t)}, {{"alpha", alpha}});
  c.e.op_into({c.out()}, scale == 1.0 ? "Identity" : "Mul",
              scale == 1.0 ? std::vector{y} : std::vector{y, c.e.scalar(scale, t)});
}

void round(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  const int64_t decimals = c.attrs().is_none(0) ? 0 : c.attrs().i(0);
  if (decimals == 0) {
    c.e.op_into({c.out()}, "Round", {c.in(0, t)});
    return;
  }
  const std::string k = c.e.scalar(std::pow(10.0, static_cast<double>(decimals)), t);
  c.e.op_into({c.out()}, "Div", {c.e.op("Round", {c.e.op("Mul", {c.in(0, t), k})}), k});
}

}  // namespace

void add_pointwise_ops(OpTable& table) {
  for (const auto& [name, type] :
       std::vector<std::pair<std::string, std::string>>{{"abs", "Abs"},
                                                        {"neg", "Neg"},
                                                        {"exp", "Exp"},
                                                        {"log", "Log"},
                                                        {"sqrt", "Sqrt"},
                                                        {"sigmoid", "Sigmoid"},
                                                        {"tanh", "Tanh"},
                                                        {"relu", "Relu"},
                                                        {"erf", "Erf"},
                                                        {"sin", "Sin"},
                                                        {"cos", "Cos"},
                                                        {"tan", "Tan"},
                                                        {"asin", "Asin"},
                                                        {"acos", "Acos"},
                                                        {"atan", "Atan"},
                                                        {"sinh", "Sinh"},
                                                        {"cosh", "Cosh"},
                                                        {"floor", "Floor"},
                                                        {"ceil", "Ceil"},
                                                        {"sign", "Sign"},
                                                        {"reciprocal", "Reciprocal"},
                                                        {"hardswish", "HardSwish"},
                                                        {"mul", "Mul"},
                                                        {"maximum", "Max"},
                                                        {"minimum", "Min"},
                                                        {"pow", "Pow"}})
    table[name] = same_type(type);
  table["fmod"] = same_type("Mod", {{"fmod", int64_t{1}}});
  table["hardsigmoid"] = same_type("HardSigmoid", {{"alpha", 1.0 / 6}, {"beta", 0.5}});
  table["selu"] = same_type("Selu", {{"alpha", 1.6732632423543772848170429916717},
                                     {"gamma", 1.0507009873554804934193349852946}});
  table["leaky_relu"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "LeakyRelu", {c.in(0, out_dtype(c))}, {{"alpha", c.attrs().f(0)}});
  };
  table["relu6"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Clip", {x, c.e.scalar(0, t), c.e.scalar(6, t)});
  });
  table["hardtanh"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Clip", {x, c.e.scalar(c.attrs().f(0), t), c.e.scalar(c.attrs().f(1), t)});
  });
  table["rsqrt"] = compose([](const OpCall& c, const std::string& x, ScalarType) {
    return c.e.op("Reciprocal", {c.e.op("Sqrt", {x})});
  });
  table["square"] = compose([](const OpCall& c, const std::string& x, ScalarType) {
    return c.e.op("Mul", {x, x});
  });
  table["log1p"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Log", {c.e.op("Add", {x, c.e.scalar(1, t)})});
  });
  table["expm1"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Sub", {c.e.op("Exp", {x}), c.e.scalar(1, t)});
  });
  table["log2"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Div", {c.e.op("Log", {x}), c.e.scalar(std::numbers::ln2, t)});
  });
  table["log10"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Div", {c.e.op("Log", {x}), c.e.scalar(std::numbers::ln10, t)});
  });
  table["exp2"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Pow", {c.e.scalar(2, t), x});
  });
  table["erfc"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Sub", {c.e.scalar(1, t), c.e.op("Erf", {x})});
  });
  table["trunc"] =
      compose([](const OpCall& c, const std::string& x, ScalarType t) { return trunc(c.e, x, t); });
  table["frac"] = compose([](const OpCall& c, const std::string& x, ScalarType t) {
    return c.e.op("Sub", {x, trunc(c.e, x, t)});
  });
  table["gelu"] = compose(gelu);
  table["silu"] = compose([](const OpCall& c, const std::string& x, ScalarType) {
    return c.e.op("Mul", {x, c.e.op("Sigmoid", {x})});
  });
  table["mish"] = compose([](const OpCall& c, const std::string& x, ScalarType) {
    return c.e.op("Mul", {x, c.e.op("Tanh", {c.e.op("Softplus", {x})})});
  });
  table["softplus"] = compose(softplus);
  table["logsigmoid"] = compose([](const OpCall& c, const std::string& x, ScalarType) {
    return c.e.op("Neg", {c.e.op("Softplus", {c.e.op("Neg", {x})})});
  });
  table["elu"] = elu;
  table["round"] = round;
  table["clamp"] = clamp;
  table["add"] = with_alpha("Add");
  table["sub"] = with_alpha("Sub");
  table["div"] = div;
  table["remainder"] = remainder;
  table["addcmul"] = addc("Mul");
  table["addcdiv"] = addc("Div");
  table["lerp"] = [](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    const std::string self = c.in(0, t);
    const std::string step = c.e.op("Mul", {c.in(2, t), c.e.op("Sub", {c.in(1, t), self})});
    c.e.op_into({c.out()}, "Add", {self, step});
  };

  table["eq"] = compare("Equal");
  table["ne"] = compare("Equal", true);
  table["lt"] = compare("Less");
  table["le"] = compare("LessOrEqual");
  table["gt"] = compare("Greater");
  table["ge"] = compare("GreaterOrEqual");
  table["logical_and"] = logical("And");
  table["logical_or"] = logical("Or");
  table["logical_xor"] = logical("Xor");
  table["logical_not"] = logical("Not");
  table["isnan"] = [](const OpCall& c) { c.e.op_into({c.out()}, "IsNaN", {c.in(0)}); };
  table["isinf"] = [](const OpCall& c) { c.e.op_into({c.out()}, "IsInf", {c.in(0)}); };
  table["isfinite"] = [](const OpCall& c) {
    const std::string bad = c.e.op("Or", {c.e.op("IsNaN", {c.in(0)}), c.e.op("IsInf", {c.in(0)})});
    c.e.op_into({c.out()}, "Not", {bad});
  };
  table["where"] = [](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    c.e.op_into({c.out()}, "Where", {c.in(0, kBool), c.in(1, t), c.in(2, t)});
  };
  table["masked_fill"] = [](const OpCall& c) {
    const ScalarType t = out_dtype(c);
    c.e.op_into({c.out()}, "Where", {c.in(1, kBool), c.in(2, t), c.in(0, t)});
  };
}

}  // namespace kiln::onnx_detail
