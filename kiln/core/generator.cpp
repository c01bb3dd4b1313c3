#include "kiln/core/generator.h"

#include <array>
#include <mutex>
#include <random>

#include "kiln/core/error.h"

namespace kiln {

struct Generator::Impl {
  mutable std::mutex mu;
  GeneratorState state;
};

Generator::Generator(uint64_t seed) : impl_(std::make_shared<Impl>()) { impl_->state = {seed, 0}; }

Generator Generator::clone() const {
  Generator copy;
  copy.set_state(get_state());
  return copy;
}

void Generator::manual_seed(uint64_t seed) { set_state({seed, 0}); }

uint64_t Generator::current_seed() const { return get_state().seed; }

uint64_t Generator::seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) | rd();
  manual_seed(s);
  return s;
}

uint64_t Generator::get_offset() const { return get_state().offset; }

void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->state.offset = offset;
}

GeneratorState Generator::get_state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->state;
}

void Generator::set_state(const GeneratorState& state) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->state = state;
}

PhiloxStream Generator::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  PhiloxStream s{impl_->state.seed, impl_->state.offset};
  impl_->state.offset += blocks;
  return s;
}

namespace {
constexpr int kMaxCudaDevices = 64;

// The default generators, created on first use with the seed of the last manual_seed.
struct Defaults {
  std::mutex mu;
  uint64_t seed = kDefaultRngSeed;
  std::unique_ptr<Generator> cpu;
  std::array<std::unique_ptr<Generator>, kMaxCudaDevices> cuda;

  static Defaults& get() {
    static Defaults* d = new Defaults();  // never destroyed: usable during static destruction
    return *d;
  }
  std::unique_ptr<Generator>& slot(Device device) {
    if (device.is_cpu()) return cpu;
    const int index = device.index() < 0 ? 0 : device.index();
    KILN_CHECK(index < kMaxCudaDevices, "default_generator: device index ", index, " out of range");
    return cuda[index];
  }
};
}  // namespace

Generator& default_generator(Device device) {
  Defaults& d = Defaults::get();
  std::lock_guard<std::mutex> lock(d.mu);
  std::unique_ptr<Generator>& g = d.slot(device);
  if (!g) g = std::make_unique<Generator>(d.seed);
  return *g;
}

Generator& generator_or_default(Generator* gen, Device device) {
  return gen ? *gen : default_generator(device);
}

void manual_seed(uint64_t seed) {
  Defaults& d = Defaults::get();
  std::lock_guard<std::mutex> lock(d.mu);
  d.seed = seed;
  if (d.cpu) d.cpu->manual_seed(seed);
  for (auto& g : d.cuda)
    if (g) g->manual_seed(seed);
}

}  // namespace kiln
