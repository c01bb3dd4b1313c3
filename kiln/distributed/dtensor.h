#pragma once
// DTensor basics (torch.distributed.tensor): a global tensor laid out on a DeviceMesh, one
// placement per mesh dimension. Shard(d): split along tensor dimension d into the mesh
// dimension's ranks, torch.chunk's way (pieces of ceil(n / ranks), the last ones shorter or
// empty); Replicate(): every rank holds all of it; Partial(): the global value is the sum of
// the ranks' values. Each rank keeps its local piece, an ordinary tensor with autograd.
//
// redistribute() moves between placements with collectives, and is differentiable: backward
// redistributes the gradient the other way (a Partial placement's gradient is replicated), so
// Shard -> Replicate all-gathers forward and takes the local piece backward, Partial ->
// Replicate all-reduces forward and passes the gradient through. A tensor dimension may be
// sharded by one mesh dimension at most. Ops on DTensors are not dispatched: compute on
// to_local() and say the result's placements with DTensor::from_local. docs/distributed.md.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/distributed/device_mesh.h"

namespace kiln::distributed {

class Placement {
 public:
  enum class Kind { kShard, kReplicate, kPartial };
  Kind kind() const { return kind_; }
  int64_t dim() const { return dim_; }  // Shard's tensor dimension
  bool is_shard() const { return kind_ == Kind::kShard; }
  bool is_replicate() const { return kind_ == Kind::kReplicate; }
  bool is_partial() const { return kind_ == Kind::kPartial; }
  std::string str() const;  // "Shard(dim=0)", "Replicate()", "Partial(sum)"
  bool operator==(const Placement& o) const { return kind_ == o.kind_ && dim_ == o.dim_; }
  bool operator!=(const Placement& o) const { return !(*this == o); }

 private:
  friend Placement Shard(int64_t dim);
  friend Placement Replicate();
  friend Placement Partial();
  Placement(Kind kind, int64_t dim) : kind_(kind), dim_(dim) {}
  Kind kind_;
  int64_t dim_;
};

Placement Shard(int64_t dim);
Placement Replicate();
Placement Partial();  // a sum

class DTensor {
 public:
  // local: this rank's piece; shape: the global shape. The placements are checked against the
  // mesh; negative Shard dimensions count from the end.
  DTensor(Tensor local, std::shared_ptr<DeviceMesh> mesh, std::vector<Placement> placements,
          std::vector<int64_t> shape);

  // torch's DTensor.from_local: the global shape assumes even pieces (each Shard dimension's
  // local size times the mesh dimension's size) unless `shape` is given.
  static DTensor from_local(const Tensor& local, std::shared_ptr<DeviceMesh> mesh,
                            std::vector<Placement> placements,
                            std::optional<std::vector<int64_t>> shape = std::nullopt);

  const Tensor& to_local() const { return local_; }
  const std::shared_ptr<DeviceMesh>& device_mesh() const { return mesh_; }
  const std::vector<Placement>& placements() const { return placements_; }
  const std::vector<int64_t>& shape() const { return shape_; }

  DTensor redistribute(std::vector<Placement> placements) const;
  // The whole tensor on every rank (redistribute to Replicate everywhere).
  Tensor full_tensor() const;

 private:
  Tensor local_;
  std::shared_ptr<DeviceMesh> mesh_;
  std::vector<Placement> placements_;
  std::vector<int64_t> shape_;
};

// torch's distribute_tensor: `tensor` (the whole tensor, on every rank) laid out on the mesh;
// every rank ends with the values of the mesh's first rank, as torch's src_data_rank=0. The
// local piece is a new leaf that requires grad when `tensor` does.
DTensor distribute_tensor(const Tensor& tensor, std::shared_ptr<DeviceMesh> mesh,
                          std::vector<Placement> placements);

// The [start, start + length) of piece `index` of `size` elements split into `pieces`,
// torch.chunk's way.
std::pair<int64_t, int64_t> chunk_range(int64_t size, int64_t pieces, int64_t index);

}  // namespace kiln::distributed
