#include "kiln/ops/pointwise_util.h"

#include "kiln/ops/ops.h"

namespace kiln::pointwise {
namespace {
template <class G>
ReferenceFn make_reference(G g) {
  return [g](const std::vector<Tensor>& in, const Attrs&) {
    std::vector<SymShape> shapes;
    for (const auto& t : in) shapes.push_back(t.sym_sizes());
    SymShape shape = meta::broadcast_shapes("reference", shapes);
    std::vector<Tensor> dense;
    for (const auto& t : in) dense.push_back(t.to(kFloat64).expand(shape).contiguous());
    Tensor out = empty(shape, kFloat64);
    double* o = out.data_ptr<double>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = g(dense, i);
    return std::vector<Tensor>{out};
  };
}
}  // namespace

ReferenceFn reference(double (*f)(double)) {
  return make_reference(
      [f](const std::vector<Tensor>& d, int64_t i) { return f(d[0].data_ptr<double>()[i]); });
}
ReferenceFn reference(double (*f)(double, double)) {
  return make_reference([f](const std::vector<Tensor>& d, int64_t i) {
    return f(d[0].data_ptr<double>()[i], d[1].data_ptr<double>()[i]);
  });
}
ReferenceFn reference(double (*f)(double, double, double)) {
  return make_reference([f](const std::vector<Tensor>& d, int64_t i) {
    return f(d[0].data_ptr<double>()[i], d[1].data_ptr<double>()[i], d[2].data_ptr<double>()[i]);
  });
}

}  // namespace kiln::pointwise
