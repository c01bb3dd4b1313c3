// Optimizers and schedules against PyTorch: the expected values come from
// tools/fixtures/optim_reference.py (PyTorch 2.x, float64).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/io/checkpoint.h"
#include "kiln/kiln.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"

using namespace kiln;
namespace optim = kiln::optim;

namespace {

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

template <class Opt, class Options>
Factory make(Options options) {
  return [options](std::vector<Tensor> params) {
    return std::make_unique<Opt>(std::move(params), options);
  };
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"SGD", make<optim::SGD>(optim::SGDOptions(0.1))},
      {"SGDMomentumNesterovDecay",
       make<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.1))},
      {"SGDDampeningMaximize",
       make<optim::SGD>(optim::SGDOptions(0.05).momentum(0.8).dampening(0.3).maximize(true))},
      {"Adam", make<optim::Adam>(optim::AdamOptions(0.1))},
      {"AdamDecayAmsgrad",
       make<optim::Adam>(optim::AdamOptions(0.1).weight_decay(0.1).amsgrad(true))},
      {"AdamW", make<optim::AdamW>(optim::AdamWOptions(0.1))},
      {"AdamWAmsgrad",
       make<optim::AdamW>(optim::AdamWOptions(0.1).weight_decay(0.3).amsgrad(true).betas(
           std::make_tuple(0.8, 0.9)))},
      {"Adagrad",
       make<optim::Adagrad>(
           optim::AdagradOptions(0.1).lr_decay(0.01).initial_accumulator_value(0.1).weight_decay(
               0.05))},
      {"RMSprop", make<optim::RMSprop>(optim::RMSpropOptions(0.01))},
      {"RMSpropCenteredMomentum",
       make<optim::RMSprop>(
           optim::RMSpropOptions(0.01).centered(true).momentum(0.9).weight_decay(0.1))},
      {"Adamax", make<optim::Adamax>(optim::AdamaxOptions(0.1).weight_decay(0.1))},
      {"NAdam", make<optim::NAdam>(optim::NAdamOptions(0.1))},
      {"NAdamDecoupled",
       make<optim::NAdam>(optim::NAdamOptions(0.1).weight_decay(0.1).decoupled_weight_decay(true))},
      {"RAdam", make<optim::RAdam>(optim::RAdamOptions(0.1))},
  };
  return f;
}

const std::vector<std::pair<std::string, std::vector<double>>> kExpectedParams = {
    {"SGD", {0.256, -0.216, 0.128}},
    {"SGDMomentumNesterovDecay", {0.1501252750625, 0.124652442375, -0.71152226975}},
    {"SGDDampeningMaximize", {0.735295, -2.00432, 5.20826}},
    {"Adam", {0.2048712525603, -0.701586272166838, 1.70062339153603}},
    {"AdamDecayAmsgrad", {0.204871252408911, -0.701586272147833, 1.70062339153185}},
    {"AdamW", {0.203712382973764, -0.698911182379502, 1.69494451387483}},
    {"AdamWAmsgrad", {0.171828508706696, -0.624067869869348, 1.53548457014453}},
    {"Adagrad", {0.298664025265641, -0.782573875281365, 1.77762567727343}},
    {"RMSprop", {0.290433226321043, -0.779982268874275, 1.77534944260295}},
    {"RMSpropCenteredMomentum", {0.0708675306202855, -0.549650155451373, 1.54067801378551}},
    {"Adamax", {0.230909754323117, -0.715499472703694, 1.70764823507505}},
    {"NAdam", {0.264727042480504, -0.752729264524169, 1.74750849955707}},
    {"NAdamDecoupled", {0.25399458702655, -0.727008097492521, 1.69201969482299}},
    {"RAdam", {0.0932682298826349, 0.255075365573382, -0.88978320254308}},
};

// The reference case: loss = sum(c * p^2), c = [1, 2, 3].
void run_steps(optim::Optimizer& opt, Tensor& p, int steps) {
  Tensor c = kiln::tensor({1.0, 2.0, 3.0}, kFloat64);
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    (c * p * p).sum().backward();
    opt.step();
  }
}

Tensor start_param(ScalarType dtype = kFloat64) {
  return kiln::tensor({0.5, -1.0, 2.0}, dtype).requires_grad_();
}

}  // namespace

TEST(Optimizers, MatchPyTorchAfterSeveralSteps) {
  for (const auto& [name, expected] : kExpectedParams) {
    SCOPED_TRACE(name);
    Tensor p = start_param();
    auto opt = factories().at(name)({p});
    run_steps(*opt, p, name == "RAdam" ? 8 : 3);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i].item<double>(), expected[i], 1e-8);
  }
}

TEST(Optimizers, Float32AndBFloat16ParametersUpdateInPlace) {
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    Tensor p = start_param(dt);
    void* data = p.data_ptr();
    optim::Adam opt({p}, optim::AdamOptions(0.1));
    run_steps(opt, p, 3);
    EXPECT_EQ(p.data_ptr(), data);
    EXPECT_EQ(p.dtype(), dt);
    const double tol = dt == kBFloat16 ? 2e-2 : 1e-5;
    EXPECT_NEAR(p[0].item<double>(), 0.2048712525603, tol);
    EXPECT_NEAR(p[2].item<double>(), 1.70062339153603, tol);
  }
}

// One step updates every parameter in one parallel loop over chunks of all of them
// (MultiTensorUpdate): parameters of several chunks, tiny ones, a transposed one, float64, each
// as an AdamW step of its own computes it in double.
TEST(Optimizers, AMultiTensorStepMatchesAStepPerParameter) {
  manual_seed(3);
  std::vector<Tensor> params = {randn({20001}), randn({3}), randn({5, 7}).t(),
                                randn({9000}, TensorOptions(kFloat64)), randn({})};
  std::vector<Tensor> singles;
  for (Tensor& p : params) {
    p.requires_grad_();
    p.set_grad(randn(p.sizes(), TensorOptions(p.dtype())));
    singles.push_back(p.detach().clone().requires_grad_());
    singles.back().set_grad(p.grad().clone());
  }
  const Tensor start0 = params[0].detach().to(kFloat64);  // a parameter of three chunks
  optim::AdamW together(params, optim::AdamWOptions(0.05).weight_decay(0.1));
  std::vector<std::unique_ptr<optim::AdamW>> one_each;
  for (Tensor& p : singles)
    one_each.push_back(std::make_unique<optim::AdamW>(std::vector<Tensor>{p},
                                                      optim::AdamWOptions(0.05).weight_decay(0.1)));
  for (int step = 0; step < 3; ++step) {
    together.step();
    for (auto& o : one_each) o->step();
  }
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(equal(params[i].detach(), singles[i].detach())) << i;
  // AdamW in float64 from the same start (the gradient is the same at each step).
  const Tensor g = singles[0].grad().to(kFloat64);
  Tensor p = start0, m = zeros_like(p), v = zeros_like(p);
  for (int t = 1; t <= 3; ++t) {
    p = p * (1 - 0.05 * 0.1);
    m = m * 0.9 + g * 0.1;
    v = v * 0.999 + g * g * 0.001;
    p = p - (m / (1 - std::pow(0.9, t))) * 0.05 / ((v / (1 - std::pow(0.999, t))).sqrt() + 1e-8);
  }
  EXPECT_TRUE(allclose(params[0].detach().to(kFloat64), p, 1e-5, 1e-6));
}

TEST(Optimizers, ParamGroupsHaveTheirOwnOptions) {
  Tensor a = start_param(), b = start_param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.0));
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  Tensor c = kiln::tensor({1.0, 2.0, 3.0}, kFloat64);
  ((c * a * a).sum() + (c * b * b).sum()).backward();
  opt.step();
  EXPECT_NEAR(a[0].item<double>(), 0.5 - 0.1 * 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(b[0].item<double>(), 0.5);  // lr 0 in its own group
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options().get_lr(), 0.0);
  EXPECT_THROW(optim::SGD({a, a}, optim::SGDOptions(0.1)), Error);
}

TEST(Optimizers, StateDictRoundTripContinuesIdentically) {
  Tensor p = start_param(), q = start_param();
  optim::AdamW a({p}, optim::AdamWOptions(0.1).amsgrad(true));
  run_steps(a, p, 2);
  optim::AdamW b({q}, optim::AdamWOptions(0.5));
  q.detach().copy_(p.detach());
  b.load_state_dict(a.state_dict());
  EXPECT_DOUBLE_EQ(b.param_groups()[0].options().get_lr(), 0.1);
  run_steps(a, p, 1);
  run_steps(b, q, 1);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(p[i].item<double>(), q[i].item<double>());
}

TEST(Optimizers, LBFGSMinimisesAQuadratic) {
  Tensor p = start_param();
  optim::LBFGS opt({p}, optim::LBFGSOptions(1.0).max_iter(50));
  Tensor c = kiln::tensor({1.0, 2.0, 3.0}, kFloat64);
  Tensor target = kiln::tensor({1.0, 2.0, -3.0}, kFloat64);
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = (c * (p - target) * (p - target)).sum();
    loss.backward();
    return loss;
  };
  opt.step(closure);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i].item<double>(), target[i].item<double>(), 1e-5);
  EXPECT_THROW(opt.step(), Error);  // needs a closure
}

// The curvature history travels in state_dict: a fresh LBFGS loaded from another one's state
// takes exactly the same next step (a fresh one without it takes a different first step).
TEST(Optimizers, LBFGSStateDictCarriesTheHistory) {
  Tensor c = kiln::tensor({1.0, 2.0, 3.0}, kFloat64);
  Tensor target = kiln::tensor({1.0, 2.0, -3.0}, kFloat64);
  auto closure_for = [&](optim::LBFGS& opt, Tensor& p) {
    return [&] {
      opt.zero_grad();
      Tensor loss = (c * (p - target) * (p - target) * (p - target) * (p - target)).sum();
      loss.backward();
      return loss;
    };
  };
  Tensor p = start_param(), q, r;
  optim::LBFGS a({p}, optim::LBFGSOptions(0.5).max_iter(3));
  a.step(closure_for(a, p));
  const auto saved = a.state_dict();
  // Two iterations: max_eval defaults to max_iter * 5 / 4 = 3 evaluations.
  EXPECT_EQ(saved.find("state.0.step")->item<int64_t>(), 2);
  EXPECT_EQ(saved.find("state.0.history.old_dirs")->sizes().vec(), (std::vector<int64_t>{1, 3}));
  {
    NoGradGuard g;
    q = p.detach().clone().requires_grad_();
    r = p.detach().clone().requires_grad_();
  }
  optim::LBFGS b({q}, optim::LBFGSOptions(0.5).max_iter(3));
  optim::LBFGS fresh({r}, optim::LBFGSOptions(0.5).max_iter(3));
  b.load_state_dict(saved);
  a.step(closure_for(a, p));
  b.step(closure_for(b, q));
  fresh.step(closure_for(fresh, r));
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(p[i].item<double>(), q[i].item<double>());
  EXPECT_GT((p - r).abs().max().item<double>(), 1e-6);
}

TEST(Optimizers, SaveAndLoadThroughSafetensors) {
  Tensor p = start_param(), q = start_param();
  optim::Adam a({p}, optim::AdamOptions(0.1));
  run_steps(a, p, 2);
  const std::string path =
      (std::filesystem::temp_directory_path() / "kiln_optim_test.safetensors").string();
  kiln::save(a, path);
  optim::Adam b({q}, optim::AdamOptions(0.1));
  kiln::load(b, path);
  q.detach().copy_(p.detach());
  run_steps(a, p, 1);
  run_steps(b, q, 1);
  EXPECT_DOUBLE_EQ(p[1].item<double>(), q[1].item<double>());
  std::filesystem::remove(path);
}

namespace {

using SchedulerFactory = std::function<std::shared_ptr<optim::LRScheduler>(optim::Optimizer&)>;

const std::vector<std::pair<std::string, std::vector<double>>> kExpectedLrs = {
    {"StepLR", {1, 1, 0.5, 0.5, 0.25, 0.25}},
    {"MultiStepLR", {1, 0.1, 0.1, 0.1, 0.01, 0.01}},
    {"ExponentialLR", {1, 0.9, 0.81, 0.729}},
    {"CosineAnnealingLR", {1, 0.868198051533946, 0.55, 0.231801948466054, 0.1, 0.231801948466054}},
    {"CosineAnnealingWarmRestarts",
     {1, 0.5, 1, 0.853553390593274, 0.5, 0.146446609406726, 1, 0.961939766255643}},
    {"LinearLR", {0.25, 0.5, 0.75, 1, 1}},
    {"OneCycleLR",
     {0.04, 0.52, 1, 0.950484632013474, 0.811745653949763, 0.611262021936289, 0.388741978063711,
      0.188258346050237, 0.0495193679865263, 4e-06}},
    {"SequentialLR", {0.5, 0.75, 1, 0.5, 0.25, 0.125}},
};

std::shared_ptr<optim::LRScheduler> make_scheduler(const std::string& name, optim::Optimizer& o) {
  using namespace kiln::optim;
  if (name == "StepLR") return std::make_shared<StepLR>(o, 2, 0.5);
  if (name == "MultiStepLR")
    return std::make_shared<MultiStepLR>(o, std::vector<int64_t>{1, 4}, 0.1);
  if (name == "ExponentialLR") return std::make_shared<ExponentialLR>(o, 0.9);
  if (name == "CosineAnnealingLR") return std::make_shared<CosineAnnealingLR>(o, 4, 0.1);
  if (name == "CosineAnnealingWarmRestarts")
    return std::make_shared<CosineAnnealingWarmRestarts>(o, 2, 2, 0.0);
  if (name == "LinearLR") return std::make_shared<LinearLR>(o, 0.25, 1.0, 3);
  if (name == "OneCycleLR") return std::make_shared<OneCycleLR>(o, 1.0, 10);
  if (name == "SequentialLR") {
    auto warm = std::make_shared<LinearLR>(o, 0.5, 1.0, 2);
    auto decay = std::make_shared<ExponentialLR>(o, 0.5);
    return std::make_shared<SequentialLR>(o, std::vector<std::shared_ptr<LRScheduler>>{warm, decay},
                                          std::vector<int64_t>{2});
  }
  ADD_FAILURE() << "unknown scheduler " << name;
  return nullptr;
}

}  // namespace

TEST(LRSchedulers, MatchPyTorch) {
  for (const auto& [name, expected] : kExpectedLrs) {
    SCOPED_TRACE(name);
    Tensor p = kiln::zeros({1}).requires_grad_();
    optim::SGD opt({p}, optim::SGDOptions(1.0).momentum(0.9));
    auto sched = make_scheduler(name, opt);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), expected[i], 1e-12) << "step " << i;
      sched->step();
    }
  }
}

TEST(LRSchedulers, OneCycleCyclesMomentumAndLambdaScales) {
  Tensor p = kiln::zeros({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0).momentum(0.9));
  optim::OneCycleLR sched(opt, 1.0, 10);
  EXPECT_NEAR(opt.param_groups()[0].options().to_map().at("momentum"), 0.95, 1e-12);
  sched.step(), sched.step();
  EXPECT_NEAR(opt.param_groups()[0].options().to_map().at("momentum"), 0.85, 1e-12);

  Tensor q = kiln::zeros({1}).requires_grad_();
  optim::Adam adam({q}, optim::AdamOptions(0.2));
  optim::LambdaLR lambda(adam, [](int64_t epoch) { return 1.0 / (1 + epoch); });
  lambda.step(), lambda.step();
  EXPECT_NEAR(adam.param_groups()[0].options().get_lr(), 0.2 / 3, 1e-12);
}

TEST(LRSchedulers, ReduceLROnPlateauWaitsForPatience) {
  Tensor p = kiln::zeros({1}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateauOptions o;
  o.patience = 2;
  o.factor = 0.5;
  optim::ReduceLROnPlateau sched(opt, o);
  for (double metric : {1.0, 0.9, 0.95, 0.95}) sched.step(metric);
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 1.0);
  sched.step(0.95);  // third epoch without improvement
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.5);
}

TEST(ClipGrad, NormAndValue) {
  Tensor a = kiln::tensor({3.0, 0.0}, kFloat64).requires_grad_();
  Tensor b = kiln::tensor({4.0}, kFloat64).requires_grad_();
  (a * a / 2).sum().backward();  // grad a = a
  (b * b / 2).sum().backward();
  const double total = nn::utils::clip_grad_norm_({a, b}, 1.0);
  EXPECT_NEAR(total, 5.0, 1e-12);
  EXPECT_NEAR(a.grad()[0].item<double>(), 3.0 / (5.0 + 1e-6), 1e-9);
  EXPECT_NEAR(b.grad()[0].item<double>(), 4.0 / (5.0 + 1e-6), 1e-9);
  nn::utils::clip_grad_value_({a, b}, 0.5);
  EXPECT_DOUBLE_EQ(b.grad()[0].item<double>(), 0.5);
  Tensor v = nn::utils::parameters_to_vector({a, b});
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{3}));
  nn::utils::vector_to_parameters(kiln::tensor({7.0, 8.0, 9.0}, kFloat64), {a, b});
  EXPECT_DOUBLE_EQ(b[0].item<double>(), 9.0);
}

// clip_grad_norm_'s two halves, which read no value: the norm as a tensor, then the scaling.
TEST(ClipGrad, TotalNormThenClipWithIt) {
  Tensor a = kiln::tensor({3.0f, 0.0f}).requires_grad_();
  Tensor b = kiln::tensor({-4.0f}).requires_grad_();
  a.set_grad(kiln::tensor({3.0f, 0.0f}));
  b.set_grad(kiln::tensor({-4.0f}));
  const Tensor total = nn::utils::get_total_norm({a.grad(), b.grad()});
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(total.dtype(), kFloat32);
  EXPECT_NEAR(total.item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(nn::utils::get_total_norm({a.grad(), b.grad()}, INFINITY).item<double>(), 4.0, 0);
  EXPECT_NEAR(nn::utils::get_total_norm({a.grad(), b.grad()}, 1).item<double>(), 7.0, 1e-6);
  EXPECT_EQ(nn::utils::get_total_norm({}).item<double>(), 0.0);

  nn::utils::clip_grads_with_norm_({a, b}, 10.0, total);  // under max_norm: unchanged
  EXPECT_EQ(b.grad()[0].item<float>(), -4.0f);
  nn::utils::clip_grads_with_norm_({a, b}, 1.0, total);
  EXPECT_NEAR(a.grad()[0].item<double>(), 3.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_NEAR(b.grad()[0].item<double>(), -4.0 / (5.0 + 1e-6), 1e-6);

  b.set_grad(kiln::tensor({NAN}));
  const std::string message = [&] {
    try {
      nn::utils::get_total_norm({a.grad(), b.grad()}, 2.0, /*error_if_nonfinite=*/true);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(message.find("non-finite"), std::string::npos) << message;
}

// An optimizer step changes every parameter in place, so a graph that saved any of them (not only
// the first of the fused op's list) refuses to run backward afterwards, as PyTorch's does.
TEST(Optimizers, AStepBumpsTheVersionOfEveryParameter) {
  for (bool adam : {false, true}) {
    Tensor w0 = randn({3}).requires_grad_(true), w1 = randn({3}).requires_grad_(true);
    w0.mutable_grad() = ones({3});
    w1.mutable_grad() = ones({3});
    std::unique_ptr<optim::Optimizer> opt;
    if (adam) {
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w0, w1}, optim::AdamOptions(0.1));
    } else {
      opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w0, w1}, optim::SGDOptions(0.1));
    }
    Tensor loss = (w1 * w1).sum();  // saves w1, the second parameter
    opt->step();
    try {
      loss.backward();
      ADD_FAILURE() << (adam ? "Adam" : "SGD") << ": backward through a changed parameter ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("inplace operation"), std::string::npos) << e.what();
    }
  }
}
