// The ONNX translation table, assembled from its groups (onnx_ops.h).
#include "kiln/export/onnx_ops.h"

namespace kiln::onnx_detail {

int64_t OpCall::dim(int64_t d, size_t i) const {
  const int64_t rank = static_cast<int64_t>(input(i).sizes.size());
  const int64_t r = d < 0 ? d + rank : d;
  if (r < 0 || r >= rank) fail("dim ", d, " is out of range for rank ", rank);
  return r;
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_pointwise_ops(t);
    add_tensor_ops(t);
    add_reduce_ops(t);
    add_nn_ops(t);
    add_rnn_ops(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::onnx_detail
