#pragma once
// Random factories and in-place random fills: rand, randn, randint, randperm, normal,
// multinomial, bernoulli and the *_ fills. `generator` null means the default generator of the
// output's device. The streams are defined in Note [Random streams] (kiln/core/generator.h).
#include "kiln/core/generator.h"
#include "kiln/core/tensor.h"

namespace kiln {

// Uniform on [0, 1); floating dtypes.
Tensor rand(SymIntList size, const TensorOptions& options = {});
Tensor rand(SymIntList size, Generator* generator, const TensorOptions& options = {});
// Standard normal; floating dtypes.
Tensor randn(SymIntList size, const TensorOptions& options = {});
Tensor randn(SymIntList size, Generator* generator, const TensorOptions& options = {});
// Normal with the given mean and standard deviation.
Tensor normal(double mean, double std, SymIntList size, Generator* generator = nullptr,
              const TensorOptions& options = {});
// Integers uniform on [low, high) (low = 0 when omitted); int64 unless options say otherwise.
Tensor randint(int64_t high, SymIntList size, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, SymIntList size, const TensorOptions& options = {});
Tensor randint(int64_t high, SymIntList size, Generator* generator,
               const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, SymIntList size, Generator* generator,
               const TensorOptions& options = {});
// A random permutation of 0 .. n-1; int64 unless options say otherwise.
Tensor randperm(int64_t n, const TensorOptions& options = {});
Tensor randperm(int64_t n, Generator* generator, const TensorOptions& options = {});

// t's sizes, dtype and device unless options say otherwise.
Tensor rand_like(const Tensor& t, const TensorOptions& options = {});
Tensor randn_like(const Tensor& t, const TensorOptions& options = {});
// Samples of N(mean, std) with per-element (broadcast) mean and std; differentiable in both
// (the sample is mean + std * eps).
Tensor normal(const Tensor& mean, const Tensor& std, Generator* generator = nullptr);
Tensor normal(const Tensor& mean, double std = 1, Generator* generator = nullptr);
Tensor normal(double mean, const Tensor& std, Generator* generator = nullptr);
Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& options = {});
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options = {});

// In-place fills (also Tensor methods).
Tensor& uniform_(Tensor& self, double from = 0, double to = 1, Generator* generator = nullptr);
Tensor& normal_(Tensor& self, double mean = 0, double std = 1, Generator* generator = nullptr);
Tensor& exponential_(Tensor& self, double lambd = 1, Generator* generator = nullptr);
// 1 with probability p, else 0, in self's dtype.
Tensor& bernoulli_(Tensor& self, double p = 0.5, Generator* generator = nullptr);
// Integers uniform on [from, to), stored in self's dtype.
Tensor& random_(Tensor& self, int64_t from, int64_t to, Generator* generator = nullptr);

// 1 with probability p[i], else 0 (p floating, values in [0, 1]); the result has p's dtype.
Tensor bernoulli(const Tensor& p, Generator* generator = nullptr);
// A tensor like self, 1 with probability p.
Tensor bernoulli(const Tensor& self, double p, Generator* generator = nullptr);
// num_samples category indices per row of `probs` (1-d or 2-d, non-negative weights that need
// not sum to 1), with or without replacement; int64.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator* generator = nullptr);

}  // namespace kiln
