// kiln::compile's capture and the "eager" backend: a captured graph replays to eager's results,
// module parameters stay graph inputs, mutations and aliasing behave as in eager.
#include <gtest/gtest.h>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_TRUE(allclose(a, b, 1e-6, 1e-6)) << a << "\n" << b;
}

Tensor gelu_affine(const Tensor& x, const Tensor& w) { return gelu(x * w + 1.0).sum(-1); }

TEST(Compile, ReplaysToTheEagerResult) {
  auto f = compile(gelu_affine);
  for (int i = 0; i < 3; ++i) {
    Tensor x = randn({4, 8}), w = randn({8});
    expect_same(f(x, w), gelu_affine(x, w));
  }
  EXPECT_EQ(f.compilations(), 1);
}

TEST(Compile, GraphListsTheOpsTheFunctionRan) {
  const Tensor x = randn({4, 8}), w = randn({8});
  compiler::Explanation e = compiler::explain(gelu_affine, x, w);
  EXPECT_EQ(e.graph_count, 1);
  // mul, full (the 1.0), add, gelu, sum
  EXPECT_EQ(e.op_count, 5) << e;
  for (const char* op : {"mul(%0, %1)", "gelu(", "sum("})
    EXPECT_NE(e.graph.find(op), std::string::npos) << op << " in\n" << e.graph;
  EXPECT_TRUE(e.fallback_reasons.empty());
}

TEST(Compile, CommonSubexpressionsAreMergedAndUnusedOpsDropped) {
  auto fn = [](const Tensor& x) {
    Tensor unused = x.exp();
    return x.sin() * 2.0 + x.sin() * 2.0;
  };
  const Tensor x = randn({5});
  // Traced: exp, sin, full, mul, sin, full, mul, add. Kept: sin, full, mul, add.
  compiler::Explanation e = compiler::explain(fn, x);
  EXPECT_EQ(e.op_count, 4) << e;
  EXPECT_EQ(e.graph.find("exp("), std::string::npos) << e;
  expect_same(compile(fn)(x), fn(x));
}

// A slice bounded by a product of three dynamic sizes: the bound is compared with the sizes (a
// guard on the hints), not decided by wrapped-around bounds into the wrong shape.
TEST(Compile, SliceOfAThreeSymbolProductKeepsItsLength) {
  auto fn = [](const Tensor& x) { return x.reshape({-1}).slice(0, 0, 100) * 2; };
  auto f = compile(fn, CompileOptions().dynamic(true));
  for (auto shape : {std::vector<int64_t>{5, 6, 7}, {2, 3, 4}, {4, 5, 6}}) {
    const Tensor x = randn(shape);
    const Tensor y = f(x);
    EXPECT_EQ(y.sizes(), fn(x).sizes());
    EXPECT_TRUE(allclose(y, fn(x)));
  }
}

TEST(Compile, ChangedArgumentsGetTheirContentBackAtTheEnd) {
  // add_ is recorded as add; the second sin reads its result; one copy_ at the end gives x its
  // new content.
  auto fn = [](const Tensor& x) {
    Tensor a = x.sin();
    x.add_(1.0);
    return a + x.sin();
  };
  Tensor x1 = randn({4}), x2 = x1.clone();
  expect_same(compile(fn)(x1), fn(x2));
  expect_same(x1, x2);
  compiler::Explanation e = compiler::explain(fn, randn({4}));
  EXPECT_EQ(e.op_count, 6) << e;  // sin, full, add, sin, add, copy_
  EXPECT_EQ(e.graph.find("add_("), std::string::npos) << e;
  EXPECT_NE(e.graph.find("copy_(%0, "), std::string::npos) << e;
  // An argument that does not start its storage, changed through a view; a view of it returned.
  auto through_view = [](const Tensor& x) {
    x.slice(0, 1, 3).mul_(2.0);
    return std::make_tuple(x.slice(0, 0, 2) * 1.0, x.slice(0, 2, 4), x);
  };
  Tensor big1 = randn({10}), big2 = big1.clone();
  auto [a1, v1, r1] = compile(through_view)(big1.slice(0, 3, 7));
  auto [a2, v2, r2] = through_view(big2.slice(0, 3, 7));
  expect_same(big1, big2);
  expect_same(a1, a2);
  expect_same(v1, v2);
  expect_same(r1, r2);
  EXPECT_EQ(r1.data_ptr(), big1.slice(0, 3, 7).data_ptr());  // the argument itself
}

TEST(Compile, InPlaceOpsOnIntermediatesAreFunctionalized) {
  // y is the function's own and nothing else reads its storage: add_ and relu_ are recorded as
  // add and relu, and the chain is one kernel.
  auto fn = [](const Tensor& x, const Tensor& b) {
    Tensor y = x * 2.0;
    y.add_(b);
    y.relu_();
    return y;
  };
  const Tensor x = randn({64, 33}), b = randn({33});
  compiler::Explanation e = compiler::explain(fn, x, b);
  EXPECT_EQ(e.graph.find("add_("), std::string::npos) << e;
  EXPECT_EQ(e.graph.find("relu_("), std::string::npos) << e;
  EXPECT_NE(e.graph.find("relu("), std::string::npos) << e;
  EXPECT_NE(e.schedule.find("kernel 0 over [64, 33]: full mul add relu (2 loads, 1 stores)"),
            std::string::npos)
      << e;
  expect_same(compile(fn)(x, b), fn(x, b));
  expect_same(compile(fn, CompileOptions().backend("eager"))(x, b), fn(x, b));
}

bool has_inplace_op(const compiler::Explanation& e) {
  for (const char* op : {"add_(", "mul_(", "copy_(", "fill_(", "relu_(", "zero_("})
    if (e.graph.find(op) != std::string::npos) return true;
  return false;
}

// The value id ("%2") of captured tensor k in the graph.
std::string captured_id(const compiler::Explanation& e, int k) {
  const size_t at = e.graph.find(" = captured " + std::to_string(k) + " :");
  if (at == std::string::npos) return "(captured " + std::to_string(k) + " not found)";
  const size_t start = e.graph.rfind('%', at);
  return e.graph.substr(start, at - start);
}

// The graph's only change to captured tensor 0 is one copy_ of its final value, as the last node.
void expect_one_copy_back(const compiler::Explanation& e) {
  const std::string copy_back = "copy_(" + captured_id(e, 0) + ", ";
  const size_t at = e.graph.find(copy_back);
  EXPECT_NE(at, std::string::npos) << e;
  EXPECT_EQ(e.graph.find(copy_back, at + 1), std::string::npos) << e;
  EXPECT_EQ(e.graph.find('\n', at), e.graph.find("\nreturn")) << e;
}

TEST(Compile, MutationsThroughViewsAreFunctionalized) {
  // A view's change is written back into its base (as_strided_scatter), and views read later
  // are recomputed from the new base: no mutation is left in the graph.
  auto through_view = [](const Tensor& x) {
    Tensor y = x * 2.0;
    Tensor before = y.slice(1, 4, 8);  // taken before the change, read after it
    y.slice(1, 0, 3).mul_(10.0);
    y.t().slice(0, 1, 2).add_(1.0);                         // a view of a view
    y.mul_(0.5);                                            // the base, now viewed
    return std::make_tuple(y + 1.0, before * 1.0, before);  // `before` is returned as a view
  };
  const Tensor x = randn({6, 8});
  compiler::Explanation e = compiler::explain(through_view, x);
  EXPECT_FALSE(has_inplace_op(e)) << e;
  EXPECT_NE(e.graph.find("as_strided_scatter("), std::string::npos) << e;
  auto [a, b, c] = compile(through_view)(x);
  auto [a2, b2, c2] = through_view(x);
  expect_same(a, a2);
  expect_same(b, b2);
  expect_same(c, c2);
  // An op without an out-of-place form (fill_) changes a clone of the view, which is then written
  // back; sizes symbolic.
  auto writes = [](const Tensor& x, const Tensor& z) {
    Tensor y = x + 1.0;
    y.slice(1, 0, 2).copy_(z);
    y.select(0, 0).fill_(7.0);
    return y.relu();
  };
  auto dynamic = compile(writes, CompileOptions().dynamic(true));
  for (int64_t n : {3, 9}) {
    const Tensor xn = randn({n, 5}), z = randn({n, 2});
    expect_same(dynamic(xn, z), writes(xn, z));
  }
  compiler::Explanation ew = compiler::explain(writes, randn({4, 5}), randn({4, 2}));
  // copy_'s new content is its source; fill_ runs on a clone of the view.
  EXPECT_EQ(ew.graph.find("copy_(%"), std::string::npos) << ew;
  EXPECT_NE(ew.graph.find("fill_(%"), std::string::npos) << ew;
  EXPECT_NE(ew.graph.find("clone(%"), std::string::npos) << ew;
  expect_same(compile(writes, CompileOptions().backend("eager"))(x, randn({6, 2}) * 0.0),
              writes(x, zeros({6, 2})));
}

TEST(Compile, AnInPlaceChangeOfDtypeStaysInPlace) {
  // add_ keeps y float16 where add would promote to float32.
  auto keeps_dtype = [](const Tensor& h, const Tensor& f) {
    Tensor y = h * 2.0;
    y.add_(f);
    return y;
  };
  const Tensor h = randn({5, 7}).to(kFloat16), f = randn({5, 7});
  EXPECT_NE(compiler::explain(keeps_dtype, h, f).graph.find("add_("), std::string::npos);
  const Tensor got = compile(keeps_dtype)(h, f);
  EXPECT_EQ(got.dtype(), kFloat16);
  expect_same(got, keeps_dtype(h, f));
}

TEST(Compile, MutationsOfCapturedTensorsAreFunctionalized) {
  // A captured tensor (a module's buffer) changed in place is computed out of place and copied
  // its final content at the end of the graph, as a changed argument is; a view of an argument
  // is written back into the argument.
  Tensor counter = zeros({3});
  auto bump = [&counter](const Tensor& x) {
    counter.add_(1.0);
    x.slice(0, 0, 1).mul_(2.0);
    return x + counter;
  };
  compiler::Explanation e = compiler::explain(bump, ones({3}));
  EXPECT_EQ(e.graph.find("add_("), std::string::npos) << e;
  EXPECT_NE(e.graph.find("add(%"), std::string::npos) << e;
  EXPECT_NE(e.graph.find("copy_(" + captured_id(e, 0) + ", "), std::string::npos) << e;
  for (const std::string backend : {"codegen", "eager"}) {
    counter.zero_();
    auto compiled = compile(bump, CompileOptions().backend(backend));
    Tensor x1 = ones({3});
    compiled(x1);
    expect_same(x1, tensor({2.0f, 1.0f, 1.0f}));
    Tensor x2 = zeros({3});
    expect_same(compiled(x2), full({3}, 2.0));
    expect_same(counter, full({3}, 2.0));
  }

  // A running average (what a norm layer keeps): the update and the reads of the new value fuse
  // into the kernel that computes the mean; one copy_ writes the buffer back.
  Tensor running = zeros({16});
  auto track = [&running](const Tensor& x) {
    running.mul_(0.9).add_(x.mean(0) * 0.1);
    return x - running;
  };
  const Tensor x = randn({8, 16});
  compiler::Explanation t = compiler::explain(track, x);
  EXPECT_EQ(t.graph.find("mul_("), std::string::npos) << t;
  EXPECT_EQ(t.graph.find("add_("), std::string::npos) << t;
  expect_one_copy_back(t);
  EXPECT_NE(t.schedule.find("mul add"), std::string::npos) << t;
  running.zero_();
  Tensor eager_running = zeros({16});
  auto track_eager = [&eager_running](const Tensor& x) {
    eager_running.mul_(0.9).add_(x.mean(0) * 0.1);
    return x - eager_running;
  };
  auto compiled = compile(track);
  const void* memory = running.data_ptr();
  for (int step = 0; step < 3; ++step) {
    const Tensor xs = randn({8, 16});
    expect_same(compiled(xs), track_eager(xs));
    expect_same(running, eager_running);
  }
  EXPECT_EQ(compiled.compilations(), 1);
  EXPECT_EQ(running.data_ptr(), memory);  // changed in place, never replaced
}

TEST(Compile, ACacheWrittenThroughViewsIsWrittenInPlace) {
  // A key/value cache: one captured [2, 6, 4] tensor, written one position at a time through
  // views of it and read back through others, as in eager.
  auto run = [](Tensor cache, bool compiled_run) {
    auto step = [&cache](const Tensor& k, const Tensor& v, int64_t pos) {
      cache.select(0, 0).slice(0, pos, pos + 1).copy_(k);
      cache.select(0, 1).select(0, pos).copy_(v.view({4}));
      return (cache.select(0, 0).slice(0, 0, pos + 1) * cache.select(0, 1).slice(0, 0, pos + 1))
          .sum(0);
    };
    std::vector<Tensor> outs;
    auto f = compile(step);
    for (int64_t pos = 0; pos < 3; ++pos) {
      const Tensor k = full({1, 4}, static_cast<double>(pos + 1));
      const Tensor v = arange(4, kFloat32).view({1, 4}) + static_cast<double>(pos);
      outs.push_back(compiled_run ? f(k, v, pos) : step(k, v, pos));
    }
    return std::make_pair(outs, cache);
  };
  const auto [got, cache] = run(zeros({2, 6, 4}), true);
  const auto [want, eager_cache] = run(zeros({2, 6, 4}), false);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i]);
  expect_same(cache, eager_cache);
  // Functionalized, the write is a new cache with the row scattered in, copied back at the end;
  // the graph writes the row into a view of the cache instead, as eager does, and the read
  // after it reads the cache.
  Tensor c = zeros({2, 6, 4});
  compiler::Explanation e = compiler::explain(
      [&c](const Tensor& k) {
        c.select(0, 0).slice(0, 1, 2).copy_(k);
        return c.select(0, 0).sum(0);
      },
      ones({1, 4}));
  EXPECT_EQ(e.graph.find("as_strided_scatter("), std::string::npos) << e;
  EXPECT_EQ(e.graph.find("clone("), std::string::npos) << e;
  const std::string cache_id = captured_id(e, 0);
  EXPECT_NE(e.graph.find("= as_strided(" + cache_id + "; [1, 4], [4, 1], 4)"), std::string::npos)
      << e;
  const size_t write = e.graph.find("copy_(%");
  EXPECT_NE(write, std::string::npos) << e;
  EXPECT_EQ(e.graph.find("copy_(%", write + 1), std::string::npos) << e;  // nothing copied back
  EXPECT_NE(e.graph.find("select(" + cache_id, write), std::string::npos) << e;

  // An argument written through views is written in place too: the views count from the start of
  // its memory, so a call with one that does not start its memory runs eagerly.
  auto write_row = [](const Tensor& x, const Tensor& row) {
    x.select(0, 1).copy_(row);
    return x.sum(0);
  };
  auto f = compile(write_row);
  Tensor x = zeros({3, 2});
  expect_same(f(x, ones({2})), ones({2}));
  expect_same(x, tensor({0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f}).view({3, 2}));
  Tensor big = zeros({4, 2}), big_eager = zeros({4, 2});
  compiler::set_logs("recompiles");
  ::testing::internal::CaptureStderr();
  expect_same(f(big.slice(0, 1, 4), full({2}, 2.0)), full({2}, 2.0));
  compiler::set_logs("");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("tensor argument 0 does not start its memory (storage offset 2)"),
            std::string::npos)
      << log;
  write_row(big_eager.slice(0, 1, 4), full({2}, 2.0));
  expect_same(big, big_eager);
  EXPECT_EQ(f.compilations(), 1);
}

TEST(Compile, CapturedTensorsThatShareMemoryAreViewsOfOne) {
  // `tail` is captured too, and lies in `whole`'s memory: after whole.add_ it reads the change.
  Tensor whole = zeros({6});
  Tensor tail = whole.slice(0, 3, 6);
  auto f = compile([&](const Tensor& x) {
    whole.add_(x);
    return tail * 2.0;
  });
  expect_same(f(ones({6})), full({3}, 2.0));
  expect_same(f(ones({6})), full({3}, 4.0));
  expect_same(whole, full({6}, 2.0));
  // A call where they no longer share memory runs eagerly, with the reason.
  compiler::set_logs("recompiles");
  ::testing::internal::CaptureStderr();
  tail.set_data(full({3}, 10.0));
  expect_same(f(ones({6})), full({3}, 20.0));
  compiler::set_logs("");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("captured tensor 1 no longer shares memory with captured tensor 0, unlike at "
                     "the capture"),
            std::string::npos)
      << log;
  expect_same(whole, full({6}, 3.0));
  EXPECT_EQ(f.compilations(), 1);
}

TEST(Compile, ACapturedTensorThatRequiresGradIsChangedInPlace) {
  // A parameter renormalised under no_grad stays the leaf later ops read: its gradient arrives.
  Tensor w = full({4}, 2.0).requires_grad_(true);
  auto fn = [&w](const Tensor& x) {
    {
      NoGradGuard no_grad;
      w.mul_(0.5);
    }
    return (x * w).sum();
  };
  compiler::Explanation e = compiler::explain(fn, ones({4}));
  EXPECT_NE(e.graph.find("mul_("), std::string::npos) << e;
  auto f = compile(fn);
  Tensor loss = f(arange(4, kFloat32));
  loss.backward();
  expect_same(w.detach(), ones({4}));
  expect_same(w.grad(), arange(4, kFloat32));
}

// A graph's inputs are distinct values; arguments that share memory (the same tensor twice, a
// view of another argument, a captured tensor) see each other's in-place changes as in eager:
// such a call runs eagerly when the graph changes its inputs, and replays it when it does not.
TEST(Compile, ArgumentsThatShareMemorySeeEachOthersChanges) {
  auto bump_then_read = [](const Tensor& a, const Tensor& b) {
    a.add_(1.0);
    return b * 2.0;
  };
  auto f = compile(bump_then_read);
  Tensor x = zeros({3}), y = zeros({3});
  expect_same(f(x, y), zeros({3}));
  expect_same(x, ones({3}));
  Tensor z = zeros({3});
  expect_same(f(z, z), full({3}, 2.0));
  Tensor rows = zeros({2, 3});
  expect_same(f(rows.select(0, 1), rows.select(0, 1)), full({3}, 2.0));  // two views of a row
  expect_same(rows, tensor({0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f}).view({2, 3}));
  EXPECT_EQ(f.compilations(), 1);  // the graph is kept for the calls that do not share memory
  expect_same(f(y, x), full({3}, 2.0));
  EXPECT_THROW(compile(bump_then_read, CompileOptions().fullgraph(true))(z, z), Error);

  Tensor counter = zeros({3});
  auto bump_captured = compile([&counter](const Tensor& x) {
    counter.add_(1.0);
    return x + 1.0;
  });
  expect_same(bump_captured(counter), full({3}, 2.0));  // reads the changed counter

  auto pure = compile([](const Tensor& a, const Tensor& b) { return a * b + a; });
  const Tensor v = tensor({1.0f, 2.0f});
  expect_same(pure(v, v), tensor({2.0f, 6.0f}));
  EXPECT_EQ(pure.compilations(), 1);
}

TEST(Compile, LambdasTuplesAndVectors) {
  auto f = compile([](const Tensor& x, std::vector<Tensor> ys, int64_t k, double s) {
    Tensor total = x * s;
    for (const Tensor& y : ys) total = total + y;
    return std::make_tuple(total, total.narrow(0, 0, k));
  });
  const Tensor x = randn({3, 2});
  const std::vector<Tensor> ys{randn({3, 2}), randn({2})};
  auto [a, b] = f(x, ys, 2, 0.5);
  Tensor expected = x * 0.5 + ys[0] + ys[1];
  expect_same(a, expected);
  expect_same(b, expected.narrow(0, 0, 2));
  // A different int argument is a different graph.
  auto [c, d] = f(x, ys, 1, 0.5);
  expect_same(d, expected.narrow(0, 0, 1));
  EXPECT_EQ(f.compilations(), 2);
}

TEST(Compile, ModuleParametersAreReadAtEachCall) {
  nn::Linear lin(4, 3);
  auto f = compile(lin);
  const Tensor x = randn({2, 4});
  NoGradGuard no_grad;
  expect_same(f(x), lin(x));
  lin->weight.mul_(2.0);  // an optimizer step changes parameters in place
  expect_same(f(x), lin(x));
  nn::Linear other(4, 3);
  lin->load_state_dict(other->state_dict());
  expect_same(f(x), other(x));
  EXPECT_EQ(f.compilations(), 1);
}

TEST(Compile, GradientsFlowThroughTheEagerBackend) {
  nn::Linear lin(4, 3);
  auto f = compile(lin);
  const Tensor x = randn({2, 4});
  f(x).sum().backward();
  Tensor g = lin->weight.grad().clone();
  lin->zero_grad();
  lin(x).sum().backward();
  expect_same(g, lin->weight.grad());
}

TEST(Compile, NoGradInsideTheFunctionHoldsInReplays) {
  // y is a constant to autograd: d(x * y)/dx = y = 2x, not 4x.
  auto fn = [](const Tensor& x) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = x * 2.0;
    }
    return x * y;
  };
  auto f = compile(fn);
  for (int call = 0; call < 2; ++call) {
    Tensor x = randn({3}).requires_grad_(true);
    f(x).sum().backward();
    expect_same(x.grad(), x.detach() * 2.0);
  }
  EXPECT_NE(f.explain(randn({3}).requires_grad_(true)).graph.find("[no grad]"), std::string::npos);
}

TEST(Compile, RequiresGradReadsAsInEager) {
  auto fn = [](const Tensor& x) { return (x * 2.0).requires_grad() ? x * 3.0 : x * 4.0; };
  auto f = compile(fn);
  const Tensor plain = ones({2});
  const Tensor leaf = ones({2}).requires_grad_(true);
  EXPECT_TRUE(allclose(f(plain), full({2}, 4.0)));
  EXPECT_TRUE(allclose(f(leaf), full({2}, 3.0)));
  NoGradGuard no_grad;
  EXPECT_TRUE(allclose(f(leaf), full({2}, 4.0)));
}

TEST(Compile, AnInputMutatedInsideIsMutatedAfterTheCall) {
  auto f = compile([](const Tensor& x) {
    x.add_(1.0);
    return x * 2.0;
  });
  Tensor x = zeros({3});
  Tensor y = f(x);
  expect_same(x, ones({3}));
  expect_same(y, full({3}, 2.0));
  f(x);
  expect_same(x, full({3}, 2.0));
}

TEST(Compile, AReturnedViewAliasesItsInput) {
  auto f = compile([](const Tensor& x) { return x.view({-1}); });
  Tensor x = randn({2, 3});
  Tensor v = f(x);
  EXPECT_EQ(v.data_ptr(), x.data_ptr());
  v.fill_(7.0);
  expect_same(x, full({2, 3}, 7.0));
}

TEST(Compile, DetachIsAGraphOp) {
  const Tensor x = randn({3});
  compiler::Explanation e = compiler::explain([](const Tensor& t) { return t.detach() * 2.0; }, x);
  EXPECT_NE(e.graph.find("detach("), std::string::npos) << e.graph;
}

TEST(Compile, ReplaysPromoteNumbersAsEagerDoes) {
  // 2.5 and 1 become wrapped numbers: int32 * 2.5 is float32, not float64. A replay must mark
  // them again, or the result's dtype would change.
  auto f = compile([](const Tensor& x) { return x * 2.5 + int64_t{1}; });
  const Tensor x = arange(4, kInt32);
  Tensor y = f(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  expect_same(y, x * 2.5 + int64_t{1});
  Tensor y2 = f(x);
  EXPECT_EQ(y2.dtype(), kFloat32);
}

TEST(Compile, FactoriesTakeSymbolicSizes) {
  auto f = compile(
      [](const Tensor& x) {
        return zeros({x.sym_size(0), 3}) + x.unsqueeze(1);
      },
      CompileOptions().dynamic(true));
  for (int64_t n : {4, 6, 9}) {
    const Tensor x = randn({n});
    expect_same(f(x), x.unsqueeze(1).expand({n, 3}).contiguous());
  }
  EXPECT_EQ(f.compilations(), 1);
}

TEST(Compile, ACompiledFunctionCalledInsideAnotherJoinsItsGraph) {
  auto inner = compile([](const Tensor& x) { return x.relu(); });
  auto outer = compile([&](const Tensor& x) { return inner(x) + 1.0; });
  const Tensor x = randn({5});
  expect_same(outer(x), x.relu() + 1.0);
  EXPECT_EQ(inner.compilations(), 0);
  EXPECT_EQ(outer.explain(x).op_count, 3);
}

TEST(Compile, GptForwardMatchesEager) {
  gpt::Config c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  gpt::GPT model(c);
  model->eval();
  auto f = compile(model);
  NoGradGuard no_grad;
  for (int64_t t : {8, 5}) {
    const Tensor idx = randint(0, 11, {3, t});
    expect_same(f(idx), model(idx));
  }
}

// The demo's --flex GPT (causal attention by flex_attention and a block mask) computes what the
// sdpa one does: logits and gradients eagerly, and the same logits compiled.
TEST(Compile, GptWithFlexAttentionMatchesSdpa) {
  gpt::Config c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_head = 2;
  c.n_embd = 16;
  manual_seed(3);
  gpt::GPT sdpa(c);
  c.flex = true;
  gpt::GPT flex(c);
  for (size_t i = 0; i < sdpa->parameters().size(); ++i) {
    NoGradGuard no_grad;
    flex->parameters()[i].copy_(sdpa->parameters()[i]);
  }
  const Tensor idx = randint(0, 11, {3, 8});
  sdpa(idx).pow(2).sum().backward();
  flex(idx).pow(2).sum().backward();
  for (size_t i = 0; i < sdpa->parameters().size(); ++i)
    EXPECT_TRUE(flex->parameters()[i].grad().allclose(sdpa->parameters()[i].grad(), 1e-4, 1e-5))
        << i;
  flex->eval();
  sdpa->eval();
  NoGradGuard no_grad;
  auto f = compile(flex);
  for (int64_t t : {8, 5}) {
    const Tensor x = randint(0, 11, {3, t});
    EXPECT_TRUE(f(x).allclose(sdpa(x), 1e-4, 1e-5)) << t;
  }
}

TEST(Compile, CnnMatchesEager) {
  nn::Sequential cnn(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                     nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 4 * 4, 10));
  auto f = compile([&](const Tensor& x) { return cnn->forward(x); });
  NoGradGuard no_grad;
  const Tensor x = randn({2, 1, 8, 8});
  expect_same(f(x), cnn->forward(x));
  EXPECT_EQ(f.explain(x).graph_count, 1);
}

}  // namespace
}  // namespace kiln
