#include "kiln/distributed/dtensor.h"

#include <sstream>

#include "kiln/autograd/function.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln::distributed {
namespace {

// Placements travel through autograd's saved data as integers: a Shard's dimension, or these.
constexpr int64_t kReplicateCode = -1, kPartialCode = -2;

int64_t encode(const Placement& p) {
  return p.is_shard() ? p.dim() : p.is_replicate() ? kReplicateCode : kPartialCode;
}
std::vector<int64_t> encode(const std::vector<Placement>& ps) {
  std::vector<int64_t> out;
  for (const Placement& p : ps) out.push_back(encode(p));
  return out;
}
Placement decode(int64_t code) {
  return code >= 0 ? Shard(code) : code == kReplicateCode ? Replicate() : Partial();
}
std::vector<Placement> decode(const std::vector<int64_t>& codes) {
  std::vector<Placement> out;
  for (int64_t c : codes) out.push_back(decode(c));
  return out;
}

// A gradient's placements: those of the value, with Partial read as Replicate (the gradient of
// a sum is the same on every rank).
std::vector<Placement> gradient_placements(std::vector<Placement> ps) {
  for (Placement& p : ps)
    if (p.is_partial()) p = Replicate();
  return ps;
}

std::string str(const std::vector<Placement>& ps) {
  std::string out = "[";
  for (size_t i = 0; i < ps.size(); ++i) out += (i ? ", " : "") + ps[i].str();
  return out + "]";
}

std::vector<Group> groups_of(const DeviceMesh& mesh) {
  std::vector<Group> groups;
  for (int64_t d = 0; d < mesh.ndim(); ++d) groups.push_back(mesh.get_group(d));
  return groups;
}

// The groups as names (find_group finds them again in backward), comma-separated.
std::string group_names(const std::vector<Group>& groups) {
  std::string out;
  for (const Group& g : groups) out += (out.empty() ? "" : ",") + g->name();
  return out;
}
std::vector<Group> find_groups(const std::string& names) {
  std::vector<Group> out;
  std::stringstream in(names);
  for (std::string name; std::getline(in, name, ',');) {
    Group g = find_group(name);
    KILN_CHECK(g != nullptr, "DTensor: redistribute's backward needs group '", name,
               "', which has been destroyed");
    out.push_back(g);
  }
  return out;
}

// Shard(dim) -> Replicate along one mesh dimension: every rank's piece, padded to the longest,
// all-gathered; the pieces of torch.chunk are a prefix of that.
Tensor gather_shards(const Tensor& local, ProcessGroup& g, int64_t dim, int64_t length) {
  const int64_t n = g.size();
  const int64_t chunk = (length + n - 1) / n;
  Tensor moved = local.movedim(dim, 0);
  if (moved.size(0) < chunk) {
    std::vector<int64_t> pad_shape = moved.sizes().vec();
    pad_shape[0] = chunk - moved.size(0);
    moved = cat({moved, zeros(pad_shape, moved.options())});
  }
  moved = moved.contiguous();
  std::vector<int64_t> out_shape = moved.sizes().vec();
  out_shape[0] = n * chunk;
  Tensor out = empty(out_shape, moved.options());
  g.all_gather_into_tensor(out, moved)->wait();
  return out.narrow(0, 0, length).movedim(0, dim).contiguous();
}

// Moves `local` between placements along every mesh dimension: first every dimension that
// changes goes to Replicate (all-gather or all-reduce), then from Replicate to its target (the
// local piece, or the value on the line's first rank for Partial). Each tensor dimension is
// sharded by one mesh dimension at most, so each step sees it whole but for its own split.
Tensor redistribute_local(Tensor local, const std::vector<Group>& groups,
                          const std::vector<Placement>& from, const std::vector<Placement>& to,
                          const std::vector<int64_t>& shape) {
  NoGradGuard no_grad;
  for (size_t d = 0; d < groups.size(); ++d) {
    if (from[d] == to[d] || from[d].is_replicate()) continue;
    ProcessGroup& g = *groups[d];
    if (from[d].is_shard()) {
      local = gather_shards(local, g, from[d].dim(), shape[from[d].dim()]);
    } else {  // Partial
      local = local.contiguous().clone();
      g.all_reduce(local)->wait();
    }
  }
  for (size_t d = 0; d < groups.size(); ++d) {
    if (from[d] == to[d] || to[d].is_replicate()) continue;
    ProcessGroup& g = *groups[d];
    if (to[d].is_shard()) {
      const auto [start, len] = chunk_range(local.size(to[d].dim()), g.size(), g.rank());
      local = local.narrow(to[d].dim(), start, len).contiguous().clone();
    } else {  // Partial: the line's first rank holds the value, the others zeros
      local = g.rank() == 0 ? local.clone() : zeros_like(local);
    }
  }
  return local;
}

struct Redistribute : autograd::Function<Redistribute> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& local,
                        const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                        const std::vector<int64_t>& shape, const std::string& groups) {
    ctx->saved_data["from"] = from;
    ctx->saved_data["to"] = to;
    ctx->saved_data["shape"] = shape;
    ctx->saved_data["groups"] = groups;
    return redistribute_local(local, find_groups(groups), decode(from), decode(to), shape);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list grads) {
    const auto& data = ctx->saved_data;
    const std::vector<Placement> from = decode(data.at("from").toIntVector());
    const std::vector<Placement> to = decode(data.at("to").toIntVector());
    Tensor grad = redistribute_local(grads[0], find_groups(data.at("groups").toStringRef()),
                                     gradient_placements(to), gradient_placements(from),
                                     data.at("shape").toIntVector());
    return {grad, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Placement Shard(int64_t dim) { return Placement(Placement::Kind::kShard, dim); }
Placement Replicate() { return Placement(Placement::Kind::kReplicate, 0); }
Placement Partial() { return Placement(Placement::Kind::kPartial, 0); }

std::string Placement::str() const {
  switch (kind_) {
    case Kind::kShard:
      return "Shard(dim=" + std::to_string(dim_) + ")";
    case Kind::kReplicate:
      return "Replicate()";
    case Kind::kPartial:
      break;
  }
  return "Partial(sum)";
}

std::pair<int64_t, int64_t> chunk_range(int64_t size, int64_t pieces, int64_t index) {
  const int64_t chunk = (size + pieces - 1) / pieces;
  const int64_t start = std::min(index * chunk, size);
  return {start, std::min(chunk, size - start)};
}

DTensor::DTensor(Tensor local, std::shared_ptr<DeviceMesh> mesh, std::vector<Placement> placements,
                 std::vector<int64_t> shape)
    : local_(std::move(local)),
      mesh_(std::move(mesh)),
      placements_(std::move(placements)),
      shape_(std::move(shape)) {
  KILN_CHECK(local_.defined() && mesh_ != nullptr, "DTensor: needs a local tensor and a mesh");
  KILN_CHECK(static_cast<int64_t>(placements_.size()) == mesh_->ndim(),
             "DTensor: ", placements_.size(), " placements for a ", mesh_->ndim(),
             "-D mesh; give one each");
  KILN_CHECK(static_cast<int64_t>(shape_.size()) == local_.dim(), "DTensor: a global shape of ",
             shape_.size(), " dimensions for a local tensor of ", local_.dim());
  std::vector<int> sharded_by(shape_.size(), -1);
  for (size_t d = 0; d < placements_.size(); ++d) {
    Placement& p = placements_[d];
    if (!p.is_shard()) continue;
    const int64_t rank = static_cast<int64_t>(shape_.size());
    KILN_CHECK(p.dim() >= -rank && p.dim() < rank, "DTensor: ", p.str(),
               " is out of range for a tensor of ", rank, " dimensions");
    if (p.dim() < 0) p = Shard(p.dim() + rank);
    KILN_CHECK(sharded_by[p.dim()] < 0, "DTensor: tensor dimension ", p.dim(),
               " is sharded by mesh dimensions ", sharded_by[p.dim()], " and ", d,
               "; sharding one tensor dimension over several mesh dimensions is not supported");
    sharded_by[p.dim()] = static_cast<int>(d);
  }
}

DTensor DTensor::from_local(const Tensor& local, std::shared_ptr<DeviceMesh> mesh,
                            std::vector<Placement> placements,
                            std::optional<std::vector<int64_t>> shape) {
  KILN_CHECK(local.defined() && mesh != nullptr, "DTensor.from_local: needs a tensor and a mesh");
  std::vector<int64_t> global = shape.value_or(local.sizes().vec());
  if (!shape) {
    for (size_t d = 0; d < placements.size() && d < static_cast<size_t>(mesh->ndim()); ++d)
      if (placements[d].is_shard()) {
        const int64_t dim =
            placements[d].dim() < 0 ? placements[d].dim() + local.dim() : placements[d].dim();
        KILN_CHECK(dim >= 0 && dim < local.dim(), "DTensor.from_local: ", placements[d].str(),
                   " is out of range for a tensor of ", local.dim(), " dimensions");
        global[dim] *= mesh->size(static_cast<int64_t>(d));
      }
  }
  return DTensor(local, std::move(mesh), std::move(placements), std::move(global));
}

DTensor DTensor::redistribute(std::vector<Placement> placements) const {
  DTensor target(local_, mesh_, std::move(placements), shape_);  // checks and normalises them
  if (target.placements_ == placements_) return *this;
  const std::vector<Group> groups = groups_of(*mesh_);
  target.local_ = Redistribute::apply(local_, encode(placements_), encode(target.placements_),
                                      shape_, group_names(groups));
  return target;
}

Tensor DTensor::full_tensor() const {
  return redistribute(std::vector<Placement>(placements_.size(), Replicate())).to_local();
}

DTensor distribute_tensor(const Tensor& tensor, std::shared_ptr<DeviceMesh> mesh,
                          std::vector<Placement> placements) {
  KILN_CHECK(tensor.defined() && mesh != nullptr, "distribute_tensor: needs a tensor and a mesh");
  DTensor layout(tensor, mesh, std::move(placements), tensor.sizes().vec());
  NoGradGuard no_grad;
  Tensor full = tensor.detach().contiguous().clone();
  const std::vector<Group> groups = groups_of(*mesh);
  for (const Group& g : groups) g->broadcast(full, 0)->wait();
  std::vector<Placement> replicated(layout.placements().size(), Replicate());
  Tensor local = redistribute_local(full, groups, replicated, layout.placements(), layout.shape());
  local = local.detach().requires_grad_(tensor.requires_grad());
  return DTensor(local, std::move(mesh), layout.placements(), layout.shape());
}

}  // namespace kiln::distributed
