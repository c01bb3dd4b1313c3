// Regional compilation: module->compile() on N modules of one type shares one compiled function
// whose graphs read each calling module's own parameters and buffers (kiln/compile/region.h).
#include <gtest/gtest.h>

#include <string>
#include <typeindex>
#include <vector>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = nn::functional;

// A residual block: x + fc(layer_norm(x)).
struct ResidualImpl : nn::Module {
  explicit ResidualImpl(int64_t width) {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})));
    fc = register_module("fc", nn::Linear(width, width));
  }
  Tensor forward(const Tensor& x) { return x + F::gelu(fc(ln(x))); }
  nn::LayerNorm ln = nullptr;
  nn::Linear fc = nullptr;
};
KILN_MODULE(Residual);

// Four residual blocks; `compiled` ones run through their holders, which honour compile().
struct Stack {
  explicit Stack(int64_t width, int n = 4) {
    for (int i = 0; i < n; ++i) blocks.emplace_back(width);
  }
  Tensor operator()(Tensor x) {
    for (Residual& b : blocks) x = b(x);
    return x;
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> out;
    for (const Residual& b : blocks)
      for (const Tensor& p : b->parameters()) out.push_back(p);
    return out;
  }
  std::vector<Residual> blocks;
};

int compilations(std::type_index type) { return compiler::region_compilations(type); }

TEST(RegionalCompile, IdenticalBlocksShareOneGraph) {
  manual_seed(0);
  Stack eager(16), compiled(16);
  for (size_t i = 0; i < eager.blocks.size(); ++i)
    compiled.blocks[i]->load_state_dict(eager.blocks[i]->state_dict());
  for (Residual& b : compiled.blocks) b->compile(CompileOptions().name("shared blocks"));
  NoGradGuard no_grad;
  const int before = compilations(typeid(ResidualImpl));
  for (int64_t batch : {3, 3, 3}) {
    const Tensor x = randn({batch, 16});
    EXPECT_TRUE(allclose(compiled(x), eager(x), 1e-5, 1e-5));
  }
  EXPECT_EQ(compilations(typeid(ResidualImpl)) - before, 1);
}

TEST(RegionalCompile, GradientsReachEachBlocksOwnParameters) {
  manual_seed(1);
  Stack eager(8, 3), compiled(8, 3);
  for (size_t i = 0; i < eager.blocks.size(); ++i)
    compiled.blocks[i]->load_state_dict(eager.blocks[i]->state_dict());
  for (Residual& b : compiled.blocks) b->compile(CompileOptions().name("trained blocks"));
  const int before = compilations(typeid(ResidualImpl));
  for (int step = 0; step < 2; ++step) {
    const Tensor x = randn({5, 8}).requires_grad_();
    const Tensor xc = x.detach().clone().requires_grad_();
    const Tensor y = compiled(xc);
    EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
    (y * y).sum().backward();
    const Tensor ye = eager(x);
    (ye * ye).sum().backward();
    EXPECT_TRUE(allclose(xc.grad(), x.grad(), 1e-4, 1e-4));
    const std::vector<Tensor> got = compiled.parameters(), want = eager.parameters();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_TRUE(got[k].grad().defined()) << "parameter " << k;
      EXPECT_TRUE(allclose(got[k].grad(), want[k].grad(), 1e-4, 1e-4)) << "parameter " << k;
      got[k].mutable_grad() = Tensor();
      want[k].mutable_grad() = Tensor();
    }
  }
  EXPECT_EQ(compilations(typeid(ResidualImpl)) - before, 1);
}

TEST(RegionalCompile, BlocksOfAnotherWidthRecompile) {
  manual_seed(2);
  Residual narrow(4), wide(6);
  narrow->compile(CompileOptions().name("two widths"));
  wide->compile(CompileOptions().name("two widths"));
  NoGradGuard no_grad;
  const int before = compilations(typeid(ResidualImpl));
  for (int round = 0; round < 2; ++round) {
    const Tensor a = randn({2, 4}), b = randn({2, 6});
    EXPECT_TRUE(allclose(narrow(a), narrow->forward(a), 1e-5, 1e-5));
    EXPECT_TRUE(allclose(wide(b), wide->forward(b), 1e-5, 1e-5));
  }
  EXPECT_EQ(compilations(typeid(ResidualImpl)) - before, 2);
}

// A tensor the forward reads that is not a parameter or buffer cannot be found in another
// module: each module then gets its own graph, never another module's tensor.
struct ScaledImpl : nn::Module {
  explicit ScaledImpl(double s) : scale(full({3}, s)) {}
  Tensor forward(const Tensor& x) { return x * scale; }
  Tensor scale;  // not registered
};
KILN_MODULE(Scaled);

TEST(RegionalCompile, ATensorTheModuleDoesNotOwnGivesEachModuleItsOwnGraph) {
  Scaled two(2.0), three(3.0);
  two->compile();
  three->compile();
  const int before = compilations(typeid(ScaledImpl));
  const Tensor x = ones({3});
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(equal(two(x), full({3}, 2.0)));
    EXPECT_TRUE(equal(three(x), full({3}, 3.0)));
  }
  EXPECT_EQ(compilations(typeid(ScaledImpl)) - before, 2);
}

// Dropout run through `call` (a compiled path) is the identity in eval() and drops about half in
// train(), whichever mode was captured first.
template <class Call>
void expect_dropout_follows_its_mode(nn::Dropout& drop, Call call) {
  const Tensor x = ones({1000});
  drop->eval();
  EXPECT_TRUE(equal(call(x), x));
  drop->train();
  const Tensor dropped = call(x);
  const double zeros = (dropped == 0).sum().item<double>();
  EXPECT_GT(zeros, 350);
  EXPECT_LT(zeros, 650);
  drop->eval();
  EXPECT_TRUE(equal(call(x), x));
}

TEST(RegionalCompile, TrainAndEvalModesHaveTheirOwnGraphs) {
  manual_seed(3);
  nn::Dropout drop(0.5);
  drop->compile(CompileOptions().backend("eager"));
  expect_dropout_follows_its_mode(drop, [&](const Tensor& x) { return drop(x); });
}

// The demo GPT with its four blocks compiled regionally trains as the eager model does, and the
// four blocks cost one capture.
TEST(RegionalCompile, TheDemoGptsBlocksCompileOnceAndTrainAsEager) {
  const gpt::Config c{/*vocab_size=*/13, /*block_size=*/8, /*n_layer=*/4, /*n_head=*/2,
                      /*n_embd=*/32};
  manual_seed(7);
  gpt::GPT eager(c);
  manual_seed(7);
  gpt::GPT compiled(c);
  for (const auto& block : *compiled->blocks)
    block->compile(CompileOptions().name("demo GPT blocks"));
  const int before = compilations(typeid(gpt::BlockImpl));
  optim::AdamW eager_opt(eager->parameters(), optim::AdamWOptions(3e-3));
  optim::AdamW compiled_opt(compiled->parameters(), optim::AdamWOptions(3e-3));
  manual_seed(8);
  for (int step = 0; step < 10; ++step) {
    const Tensor x = (randint(0, c.vocab_size, {4, 1}) + arange(c.block_size)) % c.vocab_size;
    const Tensor y = (x + 1) % c.vocab_size;
    auto loss_of = [&](gpt::GPT& m) {
      return cross_entropy(m(x).view({-1, c.vocab_size}), y.view({-1}));
    };
    eager_opt.zero_grad();
    compiled_opt.zero_grad();
    const Tensor e = loss_of(eager), got = loss_of(compiled);
    e.backward();
    got.backward();
    eager_opt.step();
    compiled_opt.step();
    EXPECT_NEAR(got.item<double>(), e.item<double>(), 1e-4) << "step " << step;
  }
  EXPECT_EQ(compilations(typeid(gpt::BlockImpl)) - before, 1);
  gpt::Block first(std::static_pointer_cast<gpt::BlockImpl>(*compiled->blocks->begin()));
  const Tensor h = first(randn({2, c.block_size, c.n_embd}));
  EXPECT_EQ(h.grad_fn()->name(), "CompiledFunctionBackward");  // the compiled backward, no fallback
}

// The same for kiln::compile(module): the module's training flag is guarded, so a graph captured
// in eval() (dropout is the identity) never replays in train().
TEST(CompiledModule, TrainAndEvalModesHaveTheirOwnGraphs) {
  manual_seed(4);
  nn::Dropout drop(0.5);
  auto f = compile(drop, CompileOptions().backend("eager"));
  expect_dropout_follows_its_mode(drop, [&](const Tensor& x) { return f(x); });
}

struct TextImpl : nn::Module {
  Tensor forward(const Tensor& x, const std::string& how) { return how == "neg" ? -x : x; }
};
KILN_MODULE(Text);

TEST(RegionalCompile, AForwardCompileCannotPassIsAClearError) {
  Text t;
  EXPECT_TRUE(equal(t(ones({2}), "neg"), -ones({2})));
  t->compile();
  try {
    t(ones({2}), "neg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("forward takes or returns types kiln::compile cannot pass"),
        std::string::npos)
        << e.what();
  }
}

// create_graph=true through a regionally compiled block runs each block again eagerly, with its
// own parameters: a gradient penalty matches eager's.
TEST(RegionalCompile, CreateGraphRunsEachBlockAgainEagerly) {
  manual_seed(0);
  Stack eager(8, 2), compiled(8, 2);
  for (size_t i = 0; i < eager.blocks.size(); ++i)
    compiled.blocks[i]->load_state_dict(eager.blocks[i]->state_dict());
  for (Residual& b : compiled.blocks) b->compile(CompileOptions().name("penalised blocks"));
  const Tensor x0 = randn({3, 8});
  auto penalty = [&](Stack& s) {
    const Tensor x = x0.clone().requires_grad_();
    const Tensor gx = autograd::grad({s(x).pow(2).sum()}, {x}, {}, std::nullopt, true)[0];
    return autograd::grad({gx.pow(2).sum()}, s.parameters());
  };
  const auto got = penalty(compiled), want = penalty(eager);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(allclose(got[i], want[i], 1e-4, 1e-5)) << i;
}

}  // namespace
}  // namespace kiln
