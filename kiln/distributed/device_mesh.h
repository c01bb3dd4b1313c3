#pragma once
// DeviceMesh: the ranks of the default group laid out as an n-dimensional array (torch's
// DeviceMesh), with one process group per mesh dimension: the ranks that differ only in that
// dimension's coordinate. DTensor places tensors on a mesh; 2-D parallelism (data parallel
// along one dimension, tensor parallel along the other) is a 2-D mesh. docs/distributed.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/distributed/distributed.h"

namespace kiln::distributed {

class DeviceMesh {
 public:
  // Every rank of the default group calls it, with the same arguments (it makes the groups).
  // The product of mesh_shape must be the world size; rank r sits at the row-major position r.
  DeviceMesh(std::string device_type, std::vector<int64_t> mesh_shape,
             std::vector<std::string> mesh_dim_names = {});

  const std::string& device_type() const { return device_type_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size(int64_t dim) const;
  int64_t size() const;  // ranks in the mesh
  const std::vector<std::string>& mesh_dim_names() const { return names_; }
  // The index of a named dimension (an error naming the known names when there is none).
  int64_t dim_index(const std::string& name) const;
  // The group along `dim`: this rank and the ranks that differ from it only in that coordinate.
  const Group& get_group(int64_t dim = 0) const;
  // This rank's coordinate along `dim` (its rank in get_group(dim)).
  int64_t get_local_rank(int64_t dim = 0) const;
  const std::vector<int64_t>& get_coordinate() const { return coordinate_; }
  // The 1-D mesh of one named dimension (mesh["tp"]): its group is this mesh's group there.
  std::shared_ptr<DeviceMesh> operator[](const std::string& name) const;

 private:
  DeviceMesh() = default;
  int64_t checked_dim(int64_t dim) const;

  std::string device_type_;
  std::vector<int64_t> shape_;
  std::vector<std::string> names_;
  std::vector<Group> groups_;
  std::vector<int64_t> coordinate_;
};

// torch.distributed.device_mesh.init_device_mesh.
std::shared_ptr<DeviceMesh> init_device_mesh(const std::string& device_type,
                                             std::vector<int64_t> mesh_shape,
                                             std::vector<std::string> mesh_dim_names = {});

}  // namespace kiln::distributed
