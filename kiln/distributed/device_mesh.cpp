#include "kiln/distributed/device_mesh.h"

#include <numeric>

#include "kiln/core/error.h"

namespace kiln::distributed {

DeviceMesh::DeviceMesh(std::string device_type, std::vector<int64_t> mesh_shape,
                       std::vector<std::string> mesh_dim_names)
    : device_type_(std::move(device_type)),
      shape_(std::move(mesh_shape)),
      names_(std::move(mesh_dim_names)) {
  KILN_CHECK(device_type_ == "cpu", "DeviceMesh: device type \"", device_type_,
             "\" is not supported; the Gloo process groups serve \"cpu\"");
  KILN_CHECK(!shape_.empty(), "DeviceMesh: the mesh needs at least one dimension");
  KILN_CHECK(names_.empty() || names_.size() == shape_.size(), "DeviceMesh: ", names_.size(),
             " dimension names for a mesh of ", shape_.size(), " dimensions");
  const int world = get_world_size();
  const int me = get_rank();
  int64_t total = 1;
  for (int64_t s : shape_) {
    KILN_CHECK(s >= 1, "DeviceMesh: mesh sizes must be positive, got ", s);
    total *= s;
  }
  KILN_CHECK(total == world, "DeviceMesh: a mesh of shape ", IntArrayRef(shape_), " holds ", total,
             " ranks, but the world size is ", world);
  // Row-major strides: rank = sum(coordinate[d] * stride[d]).
  std::vector<int64_t> stride(shape_.size(), 1);
  for (int64_t d = ndim() - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape_[d + 1];
  coordinate_.resize(shape_.size());
  for (int64_t d = 0; d < ndim(); ++d) coordinate_[d] = (me / stride[d]) % shape_[d];
  for (int64_t d = 0; d < ndim(); ++d) {
    if (shape_[d] == world) {  // the whole world: the default group serves
      groups_.push_back(default_group());
      continue;
    }
    // Every line along d, in the same order on every rank (new_group is collective).
    Group mine;
    for (int64_t base = 0; base < world; ++base) {
      if ((base / stride[d]) % shape_[d] != 0) continue;  // lines start at coordinate 0 along d
      std::vector<int> ranks;
      for (int64_t k = 0; k < shape_[d]; ++k)
        ranks.push_back(static_cast<int>(base + k * stride[d]));
      Group g = new_group(ranks);
      if (g) mine = g;
    }
    groups_.push_back(mine);
  }
}

int64_t DeviceMesh::checked_dim(int64_t dim) const {
  KILN_CHECK(dim >= 0 && dim < ndim(), "DeviceMesh: dimension ", dim, " is out of range for a ",
             ndim(), "-D mesh");
  return dim;
}

int64_t DeviceMesh::size(int64_t dim) const { return shape_[checked_dim(dim)]; }

int64_t DeviceMesh::size() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

int64_t DeviceMesh::dim_index(const std::string& name) const {
  for (size_t d = 0; d < names_.size(); ++d)
    if (names_[d] == name) return static_cast<int64_t>(d);
  std::string known;
  for (const std::string& n : names_) known += (known.empty() ? "\"" : ", \"") + n + "\"";
  KILN_FAIL("DeviceMesh: no dimension is named \"", name, "\"; the mesh's dimensions are ",
            known.empty() ? std::string("unnamed") : known);
}

const Group& DeviceMesh::get_group(int64_t dim) const { return groups_[checked_dim(dim)]; }

int64_t DeviceMesh::get_local_rank(int64_t dim) const { return coordinate_[checked_dim(dim)]; }

std::shared_ptr<DeviceMesh> DeviceMesh::operator[](const std::string& name) const {
  const int64_t d = dim_index(name);
  std::shared_ptr<DeviceMesh> sub(new DeviceMesh());
  sub->device_type_ = device_type_;
  sub->shape_ = {shape_[d]};
  sub->names_ = {name};
  sub->groups_ = {groups_[d]};
  sub->coordinate_ = {coordinate_[d]};
  return sub;
}

std::shared_ptr<DeviceMesh> init_device_mesh(const std::string& device_type,
                                             std::vector<int64_t> mesh_shape,
                                             std::vector<std::string> mesh_dim_names) {
  return std::make_shared<DeviceMesh>(device_type, std::move(mesh_shape),
                                      std::move(mesh_dim_names));
}

}  // namespace kiln::distributed
