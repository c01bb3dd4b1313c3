#include "kiln/nn/parallel/fully_shard.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/autograd/engine.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/distributed/comm.h"
#include "kiln/distributed/dtensor.h"
#include "kiln/io/safetensors.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::parallel {

// One unit's parameters: each module parameter's data is swapped between this rank's flat piece
// (at rest, and what the optimizer sees) and the whole value (during forward and backward).
struct FullyShardedBase::State : std::enable_shared_from_this<State> {
  distributed::Group group;
  int64_t n = 1, rank = 0;
  bool reshard_after_forward = true;
  ScalarType dtype = kFloat32;
  std::vector<std::string> names;
  std::vector<Tensor> params;  // the module's own tensors, whose data is swapped
  std::vector<std::vector<int64_t>> shapes;
  // Each parameter's piece length c = ceil(numel / n), and its place in a rank's row of the
  // unit's all-gather (the pieces of every parameter, each padded to c).
  std::vector<int64_t> numels, chunks, offsets;
  int64_t row = 0;
  std::vector<Tensor> shards;         // this rank's pieces, 1-D
  std::vector<Tensor> stashed_grads;  // piece gradients accumulated before this forward
  std::vector<char> whole;            // the parameter holds its whole value now
  bool finalize_queued = false;

  int64_t local_length(size_t i) const {
    return distributed::chunk_range(numels[i], n, rank).second;
  }

  // Every parameter's whole value, all-gathered in one collective.
  std::vector<Tensor> gather() const {
    NoGradGuard no_grad;
    Tensor mine = zeros({row}, dtype);
    for (size_t i = 0; i < params.size(); ++i)
      mine.narrow(0, offsets[i], shards[i].numel()).copy_(shards[i]);
    Tensor all = empty({n * row}, dtype);
    group->all_gather_into_tensor(all, mine)->wait();
    const Tensor grid = all.view({n, row});
    std::vector<Tensor> out;
    for (size_t i = 0; i < params.size(); ++i)
      out.push_back(grid.narrow(1, offsets[i], chunks[i])
                        .reshape({-1})
                        .narrow(0, 0, numels[i])
                        .view(shapes[i]));
    return out;
  }

  void unshard() {
    if (params.empty()) return;
    const std::vector<Tensor> values = gather();
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].set_data(values[i]);
      whole[i] = 1;
    }
  }

  void reshard(size_t i) {
    if (!whole[i]) return;
    params[i].set_data(shards[i]);
    whole[i] = 0;
  }
  void reshard() {
    for (size_t i = 0; i < params.size(); ++i) reshard(i);
  }

  // Piece gradients from earlier backward passes (gradient accumulation) wait aside, so that
  // backward accumulates whole gradients into an empty .grad.
  void stash_grads() {
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& g = params[i].grad();
      if (g.defined() && g.dim() == 1 && g.numel() == shards[i].numel()) stashed_grads[i] = g;
      params[i].set_grad(Tensor());
    }
  }

  void on_gradient(size_t i) {
    if (!finalize_queued) {
      std::weak_ptr<State> weak = weak_from_this();
      autograd::queue_callback([weak] {
        if (auto s = weak.lock()) s->finalize();
      });
      finalize_queued = true;
    }
    reshard(i);  // backward is done with it: no node left uses the whole value
  }

  // When backward ends: every parameter's whole gradient (zeros where none arrived) reduce-
  // scattered in one collective and averaged; each rank keeps its piece's.
  void finalize() {
    finalize_queued = false;
    NoGradGuard no_grad;
    Tensor grid = zeros({n, row}, dtype);
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& g = params[i].grad();
      if (!g.defined()) continue;
      Tensor padded = zeros({n * chunks[i]}, dtype);
      padded.narrow(0, 0, numels[i]).copy_(g.reshape({-1}));
      grid.narrow(1, offsets[i], chunks[i]).copy_(padded.view({n, chunks[i]}));
    }
    Tensor mine = empty({row}, dtype);
    group->reduce_scatter_tensor(mine, grid.view({-1}))->wait();
    mine.mul_(1.0 / static_cast<double>(n));
    for (size_t i = 0; i < params.size(); ++i) {
      reshard(i);
      Tensor g = mine.narrow(0, offsets[i], local_length(i)).clone();
      if (stashed_grads[i].defined()) g = stashed_grads[i] + g;
      stashed_grads[i] = Tensor();
      params[i].set_grad(g);
    }
  }
};

namespace {

// The units in `module`'s tree, outermost first: `module`'s own submodules that are units,
// and their paths.
void find_units(Module& module, const std::string& prefix,
                std::vector<std::pair<std::string, FullyShardedBase*>>& out) {
  for (const auto& item : module.named_children()) {
    const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
    if (auto* unit = dynamic_cast<FullyShardedBase*>(item.value().get())) {
      out.emplace_back(path, unit);
      continue;  // its own tree is its business
    }
    find_units(*item.value(), path, out);
  }
}

// "fc1.module.weight" -> "fc1.weight": the names the model has without its wrappers.
std::string without_wrappers(std::string name,
                             const std::vector<std::pair<std::string, FullyShardedBase*>>& units) {
  for (size_t k = units.size(); k-- > 1;) {  // innermost first; the root wraps no name
    const std::string& path = units[k].first;
    const std::string inner = path + ".module.";
    if (name.rfind(inner, 0) == 0) name = path + "." + name.substr(inner.size());
  }
  return name;
}

// A unit's parameter name as the root's wrapped module names it.
std::string qualified(const std::string& unit_path, const std::string& name) {
  return unit_path.empty() ? name : unit_path + ".module." + name;
}

}  // namespace

FullyShardedBase::FullyShardedBase(std::shared_ptr<Module> module, const FullyShardOptions& options)
    : wrapped_(std::move(module)), state_(std::make_shared<State>()) {
  KILN_CHECK(wrapped_ != nullptr, "fully_shard: the module is null");
  State& s = *state_;
  if (options.mesh()) {
    KILN_CHECK(options.mesh()->ndim() == 1, "fully_shard: needs a 1-D mesh, got a ",
               options.mesh()->ndim(), "-D one (pass mesh[\"dp\"])");
    s.group = options.mesh()->get_group(0);
  } else {
    s.group = distributed::default_group();
  }
  s.n = s.group->size();
  s.rank = s.group->rank();
  s.reshard_after_forward = options.reshard_after_forward();
  register_module("module", wrapped_);

  // This unit's parameters: the wrapped module's, less those of inner units.
  std::set<const TensorImpl*> inner;
  std::vector<std::pair<std::string, FullyShardedBase*>> units;
  find_units(*wrapped_, "", units);
  for (const auto& [path, unit] : units)
    for (const Tensor& p : unit->parameters()) inner.insert(p.impl());
  std::vector<Tensor> whole_values;
  for (const auto& item : wrapped_->named_parameters()) {
    const Tensor& p = item.value();
    if (inner.count(p.impl()) || !p.requires_grad()) continue;
    KILN_CHECK(s.params.empty() || p.dtype() == s.dtype, "fully_shard: parameter '", item.key(),
               "' is ", p.dtype(), " but '", s.names.front(), "' is ", s.dtype,
               "; the parameters of one unit share a dtype (wrap the others in a unit of their "
               "own)");
    KILN_CHECK(p.device().is_cpu(), "fully_shard: parameter '", item.key(), "' is on ", p.device(),
               "; the Gloo process group serves CPU tensors only");
    s.dtype = p.dtype();
    s.names.push_back(item.key());
    s.params.push_back(p);
    s.shapes.push_back(p.sizes().vec());
    s.numels.push_back(p.numel());
    s.chunks.push_back((p.numel() + s.n - 1) / s.n);
    s.offsets.push_back(s.row);
    s.row += s.chunks.back();
  }
  // Rank 0's values everywhere, then each rank keeps its piece.
  NoGradGuard no_grad;
  std::vector<Tensor> values;
  for (const Tensor& p : s.params) values.push_back(p.detach().clone());
  distributed::broadcast_coalesced(*s.group, values, 0);
  for (size_t i = 0; i < s.params.size(); ++i) {
    const auto [start, len] = distributed::chunk_range(s.numels[i], s.n, s.rank);
    s.shards.push_back(values[i].reshape({-1}).narrow(0, start, len).clone());
    s.params[i].set_data(s.shards[i]);
    std::weak_ptr<State> weak = state_;
    s.params[i].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto st = weak.lock()) st->on_gradient(i);
    });
  }
  s.stashed_grads.resize(s.params.size());
  s.whole.assign(s.params.size(), 0);
}

FullyShardedBase::~FullyShardedBase() = default;

const std::vector<std::string>& FullyShardedBase::managed_names() const { return state_->names; }

bool FullyShardedBase::is_sharded() const {
  for (char w : state_->whole)
    if (w) return false;
  return true;
}

void FullyShardedBase::before_forward() {
  state_->stash_grads();
  state_->unshard();
}

void FullyShardedBase::after_forward(const std::vector<Tensor>& outputs) {
  State& s = *state_;
  bool backward_follows = false;
  for (const Tensor& t : outputs) backward_follows = backward_follows || t.requires_grad();
  backward_follows = backward_follows && GradMode::is_enabled();
  if (!backward_follows) {
    s.reshard();
    return;
  }
  if (!s.reshard_after_forward) return;
  s.reshard();
  // Gather again when backward reaches this unit's outputs, before its nodes run.
  std::weak_ptr<State> weak = state_;
  for (const Tensor& t : outputs)
    if (t.requires_grad())
      t.register_hook([weak](const Tensor&) {
        if (auto st = weak.lock())
          if (std::find(st->whole.begin(), st->whole.end(), 1) == st->whole.end()) st->unshard();
      });
}

// This unit and every unit inside it, with their paths in the wrapped module's names (an inner
// unit's parameters are named "<path>.module.<name>").
std::vector<std::pair<std::string, FullyShardedBase*>> FullyShardedBase::all_units() {
  std::vector<std::pair<std::string, FullyShardedBase*>> units = {{"", this}};
  for (size_t k = 0; k < units.size(); ++k) {
    const std::string prefix = k == 0 ? "" : units[k].first + ".module";
    FullyShardedBase* unit = units[k].second;
    find_units(*unit->wrapped_, prefix, units);
  }
  return units;
}

std::map<std::string, Tensor> FullyShardedBase::full_state_dict() {
  const auto units = all_units();
  std::map<const TensorImpl*, Tensor> whole;
  for (const auto& [path, unit] : units) {
    const std::vector<Tensor> values = unit->state_->gather();
    for (size_t i = 0; i < values.size(); ++i)
      whole[unit->state_->params[i].impl()] = values[i].clone();
  }
  std::map<std::string, Tensor> out;
  for (const auto& item : wrapped_->named_parameters()) {
    const auto it = whole.find(item.value().impl());
    out[without_wrappers(item.key(), units)] =
        it != whole.end() ? it->second : item.value().detach().clone();
  }
  for (const auto& item : wrapped_->named_buffers())
    out[without_wrappers(item.key(), units)] = item.value().detach().clone();
  return out;
}

// Rank r's file holds its pieces, flat, by the model's names; the whole value of a parameter is
// the pieces of ranks 0, 1, ... end to end. Buffers go whole into rank 0's file.
void FullyShardedBase::save_sharded(const std::string& directory) {
  const auto units = all_units();
  const State& root = *state_;
  std::map<std::string, Tensor> pieces;
  std::ostringstream index;
  index << "{\"world_size\": " << root.n << ", \"files\": [";
  for (int64_t r = 0; r < root.n; ++r)
    index << (r ? ", " : "") << "\"rank" << r << ".safetensors\"";
  index << "], \"parameters\": {";
  bool first = true;
  for (const auto& [path, unit] : units) {
    const State& s = *unit->state_;
    KILN_CHECK(s.n == root.n, "save_sharded: every unit must shard over the same ranks; '", path,
               "' shards over ", s.n, ", the model over ", root.n);
    for (size_t i = 0; i < s.params.size(); ++i) {
      const std::string name = without_wrappers(qualified(path, s.names[i]), units);
      pieces[name] = s.shards[i];
      index << (first ? "" : ", ") << "\"" << name << "\": {\"shape\": [";
      for (size_t d = 0; d < s.shapes[i].size(); ++d) index << (d ? ", " : "") << s.shapes[i][d];
      index << "], \"dtype\": \"" << io::safetensors_dtype_name(s.dtype) << "\"}";
      first = false;
    }
  }
  index << "}}\n";
  if (root.rank == 0)
    for (const auto& item : wrapped_->named_buffers())
      pieces["buffers/" + without_wrappers(item.key(), units)] = item.value();
  std::filesystem::create_directories(directory);
  io::save_safetensors(
      pieces, directory + "/rank" + std::to_string(root.rank) + ".safetensors",
      {{"world_size", std::to_string(root.n)}, {"rank", std::to_string(root.rank)}});
  if (root.rank == 0) {
    std::ofstream(directory + "/index.json") << index.str();
  }
  root.group->barrier()->wait();  // no rank reads a checkpoint still being written
}

void FullyShardedBase::load_sharded(const std::string& directory) {
  const auto units = all_units();
  const io::SafetensorsFile first = io::load_safetensors(directory + "/rank0.safetensors");
  const auto world_it = first.metadata.find("world_size");
  KILN_CHECK(world_it != first.metadata.end(), "load_sharded: '", directory,
             "/rank0.safetensors' has no world_size; it is not a sharded checkpoint");
  const int64_t saved_world = std::stoll(world_it->second);
  KILN_CHECK(saved_world >= 1 && saved_world <= 65536, "load_sharded: world_size ", saved_world,
             " in '", directory, "/rank0.safetensors' is not valid");
  std::vector<io::SafetensorsFile> files = {first};
  for (int64_t r = 1; r < saved_world; ++r)
    files.push_back(io::load_safetensors(directory + "/rank" + std::to_string(r) + ".safetensors"));
  NoGradGuard no_grad;
  for (const auto& [path, unit] : units) {
    State& s = *unit->state_;
    for (size_t i = 0; i < s.params.size(); ++i) {
      const std::string name = without_wrappers(qualified(path, s.names[i]), units);
      std::vector<Tensor> parts;
      for (int64_t r = 0; r < saved_world; ++r) {
        const auto it = files[r].tensors.find(name);
        KILN_CHECK(it != files[r].tensors.end(), "load_sharded: '", directory, "/rank", r,
                   ".safetensors' has no piece of parameter '", name, "'");
        parts.push_back(it->second.reshape({-1}));
      }
      const Tensor flat = cat(parts);
      KILN_CHECK(flat.numel() == s.numels[i], "load_sharded: parameter '", name, "' has ",
                 flat.numel(), " elements in the checkpoint and ", s.numels[i], " in the model");
      const auto [start, len] = distributed::chunk_range(s.numels[i], s.n, s.rank);
      s.shards[i].copy_(flat.narrow(0, start, len));
    }
  }
  for (const auto& item : wrapped_->named_buffers()) {
    const std::string name = "buffers/" + without_wrappers(item.key(), units);
    const auto it = first.tensors.find(name);
    KILN_CHECK(it != first.tensors.end(), "load_sharded: the checkpoint has no buffer '", name,
               "'");
    item.value().copy_(it->second);
  }
}

}  // namespace kiln::nn::parallel
