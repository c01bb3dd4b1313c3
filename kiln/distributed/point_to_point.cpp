// send and recv: posted to Gloo on the caller's thread at once, completed on the group's
// transfer queue. Gloo's send completes once the peer has posted the matching recv, so a
// blocking send waits for it, as with PyTorch's Gloo groups.
#include <gloo/transport/unbound_buffer.h>

#include "kiln/core/error.h"
#include "kiln/distributed/process_group_impl.h"

namespace kiln::distributed {
namespace {

// Slots of point-to-point messages, apart from those Gloo's collectives use: the user's tag in
// the low bits under a prefix of our own.
constexpr uint64_t kPointToPointSlot = uint64_t{0xfe} << 56;

uint64_t slot_of(int tag) { return kPointToPointSlot | static_cast<uint32_t>(tag); }

// Waits for a posted transfer; `what` ("send: 4 elements to rank 1") starts the error of a
// transfer that failed or did not complete within timeout.
template <class Wait>
void wait_transfer(const std::string& what, std::chrono::milliseconds timeout, Wait wait) {
  bool done = false;
  try {
    done = wait();
  } catch (const std::exception& e) {
    KILN_FAIL(what, ": ", e.what());
  }
  KILN_CHECK(done, what, ": not completed within ", timeout.count(), " ms");
}

}  // namespace

std::shared_ptr<Work> ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  Impl& g = *impl_;
  g.check_tensor("send", tensor);
  g.check_rank("send", "destination", dst);
  KILN_CHECK(dst != g.rank, "send: rank ", g.rank, " cannot send to itself");
  const Tensor dense = tensor.contiguous().clone();  // the caller may change tensor meanwhile
  std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
      g.context->createUnboundBuffer(dense.data_ptr(), dense.nbytes());
  buffer->send(dst, slot_of(tag));
  const std::string what = detail::str_cat("send: ", dense.numel(), " elements to rank ", dst);
  return g.transfers->push("send", [buffer, dense, what, timeout = g.options.timeout] {
    wait_transfer(what, timeout, [&] { return buffer->waitSend(timeout); });
  });
}

std::shared_ptr<Work> ProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  Impl& g = *impl_;
  g.check_tensor("recv", tensor);
  if (src >= 0) {
    g.check_rank("recv", "source", src);
    KILN_CHECK(src != g.rank, "recv: rank ", g.rank, " cannot receive from itself");
  }
  const DenseBuffer into(tensor);
  std::shared_ptr<gloo::transport::UnboundBuffer> buffer =
      g.context->createUnboundBuffer(into.data(), tensor.nbytes());
  if (src >= 0) {
    buffer->recv(src, slot_of(tag));
  } else {
    std::vector<int> others;
    for (int r = 0; r < g.size; ++r)
      if (r != g.rank) others.push_back(r);
    buffer->recv(others, slot_of(tag));
  }
  const std::string what = detail::str_cat("recv: ", tensor.numel(), " elements from ",
                                           src >= 0 ? "rank " + std::to_string(src) : "any rank");
  auto source = std::make_shared<int>(-1);
  auto work = g.transfers->push("recv", [buffer, into, what, source, timeout = g.options.timeout] {
    wait_transfer(what, timeout, [&] { return buffer->waitRecv(source.get(), timeout); });
    into.write_back();
  });
  work->set_source(source);
  return work;
}

}  // namespace kiln::distributed
