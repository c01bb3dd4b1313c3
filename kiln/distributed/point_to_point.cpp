// send and recv: posted to Gloo on the caller's thread at once, completed on the group's
// transfer queue. Gloo's send completes once the peer has posted the matching recv, so a
// blocking send waits for it, as with PyTorch's Gloo groups.
//
// Every message is two: a fixed-size header (element count, dtype, bytes) and the data. The
// receiver posts only the header's recv at once and the data's once the header has arrived: Gloo
// aborts the process when a message is larger than the buffer posted for it, so a mismatched
// pair receives the data into a buffer of the sender's size and raises an error instead, and the
// messages after it stay in step.
#include <gloo/transport/unbound_buffer.h>

#include <array>

#include "kiln/core/error.h"
#include "kiln/distributed/process_group_impl.h"
#include "kiln/ops/creation.h"

namespace kiln::distributed {
namespace {

using Header = std::array<int64_t, 3>;  // numel, dtype, bytes

// Slots of point-to-point messages, apart from those Gloo's collectives use: the user's tag in
// the low bits under a prefix of our own, one for headers and one for data.
constexpr uint64_t kHeaderSlot = uint64_t{0xfd} << 56;
constexpr uint64_t kDataSlot = uint64_t{0xfe} << 56;

uint64_t slot(uint64_t prefix, int tag) { return prefix | static_cast<uint32_t>(tag); }

std::string describe(const Header& h) {
  return detail::str_cat(h[0], " ", static_cast<ScalarType>(h[1]), " elements");
}

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
  KILN_CHECK(done, what, ": not completed within ", timeout.count(),
             " ms, or its group was destroyed first");
}

}  // namespace

std::shared_ptr<Work> ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  Impl& g = *impl_;
  g.check_tensor("send", tensor);
  g.check_rank("send", "destination", dst);
  KILN_CHECK(dst != g.rank, "send: rank ", g.rank, " cannot send to itself");
  const SigpipeBlocked sigpipe_blocked;
  const Tensor dense = tensor.contiguous().clone();  // the caller may change tensor meanwhile
  auto header = std::make_shared<Header>(Header{dense.numel(), static_cast<int64_t>(dense.dtype()),
                                                static_cast<int64_t>(dense.nbytes())});
  std::shared_ptr<gloo::transport::UnboundBuffer> head =
      g.post_buffer(header->data(), sizeof(Header));
  std::shared_ptr<gloo::transport::UnboundBuffer> data =
      g.post_buffer(dense.data_ptr(), dense.nbytes());
  head->send(dst, slot(kHeaderSlot, tag));
  data->send(dst, slot(kDataSlot, tag));
  const std::string what = detail::str_cat("send: ", describe(*header), " to rank ", dst);
  const uint64_t id = g.record_p2p("send to rank " + std::to_string(dst), dense);
  return g.transfer_queue(true, dst, tag)
      .push("send", [&g, id, head, data, header, dense, what, timeout = g.options.timeout] {
        g.run_recorded(id, "send", [&] {
          wait_transfer(what, timeout,
                        [&] { return head->waitSend(timeout) && data->waitSend(timeout); });
        });
      });
}

std::shared_ptr<Work> ProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  Impl& g = *impl_;
  g.check_tensor("recv", tensor);
  if (src >= 0) {
    g.check_rank("recv", "source", src);
    KILN_CHECK(src != g.rank, "recv: rank ", g.rank, " cannot receive from itself");
  }
  const SigpipeBlocked sigpipe_blocked;
  auto header = std::make_shared<Header>();
  std::shared_ptr<gloo::transport::UnboundBuffer> head =
      g.post_buffer(header->data(), sizeof(Header));
  if (src >= 0) {
    head->recv(src, slot(kHeaderSlot, tag));
  } else {
    std::vector<int> others;
    for (int r = 0; r < g.size; ++r)
      if (r != g.rank) others.push_back(r);
    head->recv(others, slot(kHeaderSlot, tag));
  }
  const Header expected{tensor.numel(), static_cast<int64_t>(tensor.dtype()),
                        static_cast<int64_t>(tensor.nbytes())};
  const std::string what = detail::str_cat("recv: ", describe(expected), " from ",
                                           src >= 0 ? "rank " + std::to_string(src) : "any rank");
  auto source = std::make_shared<int>(-1);
  const uint64_t id = g.record_p2p(
      src >= 0 ? "recv from rank " + std::to_string(src) : std::string("recv from any rank"),
      tensor);
  auto work =
      g.transfer_queue(false, src, tag)
          .push("recv", [&g, id, head, header, expected, tensor, tag, what, source,
                         timeout = g.options.timeout] {
            g.run_recorded(id, "recv", [&] {
              wait_transfer(what, timeout, [&] { return head->waitRecv(source.get(), timeout); });
              const bool matches = *header == expected;
              // A mismatched message still arrives whole, into a buffer of its own size.
              const DenseBuffer into(matches ? tensor
                                             : empty({(*header)[2]}, TensorOptions(kUInt8)));
              auto data = g.post_buffer(into.data(), into.dense.nbytes());
              data->recv(*source, slot(kDataSlot, tag));
              wait_transfer(what, timeout, [&] { return data->waitRecv(timeout); });
              KILN_CHECK(matches, what, ": rank ", *source, " sent ", describe(*header),
                         "; a matched send and recv must agree in element count and dtype");
              into.write_back();
            });
          });
  work->set_source(source);
  return work;
}

}  // namespace kiln::distributed
