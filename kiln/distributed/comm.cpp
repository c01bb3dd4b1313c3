#include "kiln/distributed/comm.h"

#include <map>
#include <sstream>

#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln::distributed {
namespace {

// FNV-1a over the bytes of `v`.
void mix(uint64_t& h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
}

std::string describe(const std::string& name, const Tensor& t) {
  std::ostringstream os;
  os << "'" << name << "' of shape " << t.sizes() << " and dtype " << t.dtype();
  return os.str();
}

}  // namespace

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root,
                         int64_t buffer_bytes) {
  if (group.size() == 1) return;
  NoGradGuard no_grad;
  std::map<ScalarType, std::vector<Tensor>> by_dtype;
  for (const Tensor& t : tensors)
    if (t.numel() > 0) by_dtype[t.dtype()].push_back(t);
  for (auto& [dtype, list] : by_dtype) {
    const int64_t cap = std::max<int64_t>(1, buffer_bytes / element_size(dtype));
    size_t begin = 0;
    while (begin < list.size()) {
      size_t end = begin;
      int64_t count = 0;
      while (end < list.size() && (end == begin || count + list[end].numel() <= cap))
        count += list[end++].numel();
      Tensor flat = empty({count}, TensorOptions().dtype(dtype).device(list[begin].device()));
      int64_t offset = 0;
      for (size_t i = begin; i < end; ++i) {
        flat.narrow(0, offset, list[i].numel()).view(list[i].sizes()).copy_(list[i]);
        offset += list[i].numel();
      }
      group.broadcast(flat, root)->wait();
      offset = 0;
      for (size_t i = begin; i < end; ++i) {
        list[i].copy_(flat.narrow(0, offset, list[i].numel()).view(list[i].sizes()));
        offset += list[i].numel();
      }
      begin = end;
    }
  }
}

void verify_same_shapes_across_ranks(ProcessGroup& group, const std::vector<Tensor>& tensors,
                                     const std::vector<std::string>& names, const char* what) {
  if (group.size() == 1) return;
  uint64_t h = 14695981039346656037ull;
  mix(h, tensors.size());
  for (const Tensor& t : tensors) {
    mix(h, static_cast<uint64_t>(t.dtype()));
    mix(h, static_cast<uint64_t>(t.dim()));
    for (int64_t s : t.sizes()) mix(h, static_cast<uint64_t>(s));
  }
  Tensor mine = full({1}, static_cast<int64_t>(h), kInt64);
  Tensor all = empty({group.size()}, kInt64);
  group.all_gather_into_tensor(all, mine)->wait();
  std::vector<int> differ;
  for (int r = 0; r < group.size(); ++r)
    if (all.data_ptr<int64_t>()[r] != all.data_ptr<int64_t>()[0]) differ.push_back(r);
  if (differ.empty()) return;
  std::ostringstream ranks;
  for (size_t i = 0; i < differ.size(); ++i) ranks << (i ? ", " : "") << differ[i];
  int64_t elements = 0;
  for (const Tensor& t : tensors) elements += t.numel();
  std::string last = tensors.empty() ? std::string("none")
                                     : describe(names.at(tensors.size() - 1), tensors.back());
  KILN_FAIL(what, ": the parameters differ across ranks: rank(s) ", ranks.str(),
            " have other shapes or dtypes than rank 0 (this rank, ", group.rank(), ", has ",
            tensors.size(), " of them with ", elements, " elements in all, the last ", last,
            "); every rank must build the same model");
}

}  // namespace kiln::distributed
