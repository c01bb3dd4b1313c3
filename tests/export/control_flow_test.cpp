// kiln::cond and kiln::while_loop: eager, exported (both branches or the loop kept as
// subgraphs, through a file), under kiln::compile (a graph break) and differentiated.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/export/export_test_util.h"

namespace kiln {
namespace {

using Tensors = std::vector<Tensor>;

using testing::error_of;
using testing::round_trip;

// sin(x) * w where x sums positive, else cos(x) - 1.
Tensor branchy(const Tensor& x, const Tensor& w) {
  return cond(
      x.sum() > 0, [&w](const Tensors& v) { return Tensors{v[0].sin() * w}; },
      [](const Tensors& v) { return Tensors{v[0].cos() - 1}; }, {x})[0];
}

TEST(ControlFlow, CondRunsOneBranchEagerly) {
  const Tensor w = randn({3});
  const Tensor pos = rand({4, 3}), neg = -rand({4, 3});
  EXPECT_TRUE(allclose(branchy(pos, w), pos.sin() * w));
  EXPECT_TRUE(allclose(branchy(neg, w), neg.cos() - 1));
  EXPECT_NE(error_of([&] { cond(ones({2}, kBool), {}, {}, {}); }).find("one-element bool"),
            std::string::npos);
}

TEST(ControlFlow, ExportedCondKeepsBothBranchesThroughAFile) {
  manual_seed(1);
  const Tensor w = randn({3});
  auto fn = [w](const Tensor& x) { return branchy(x, w); };
  const ExportedProgram p =
      round_trip(export_program(fn, {rand({4, 3})}, {{{0, Dim("batch", 2, 64)}}}));
  EXPECT_EQ(p.op_counts().at("cond"), 1);
  EXPECT_EQ(p.graph().subgraphs.size(), 2u);
  EXPECT_EQ(p.constants().size(), 1u);  // w, read by one branch, is the program's
  for (int64_t n : {2, 7}) {
    const Tensor pos = rand({n, 3}), neg = -rand({n, 3});
    EXPECT_TRUE(allclose(p.run({pos})[0], fn(pos))) << n;
    EXPECT_TRUE(allclose(p.run({neg})[0], fn(neg))) << n;
  }
}

TEST(ControlFlow, GradientsFlowThroughTheTakenBranch) {
  manual_seed(2);
  const Tensor w = randn({3});
  auto fn = [w](const Tensor& x) { return branchy(x, w); };
  const ExportedProgram p = round_trip(export_program(fn, {rand({4, 3})}));
  for (const Tensor& x0 : {rand({4, 3}), -rand({4, 3})}) {
    const Tensor a = x0.clone().requires_grad_(), b = x0.clone().requires_grad_();
    fn(a).sum().backward();
    p.run({b})[0].sum().backward();
    ASSERT_TRUE(b.grad().defined());
    EXPECT_TRUE(allclose(b.grad(), a.grad()));
  }
}

// A file whose cond node claims more captured tensors than it has inputs (a count near INT64_MAX
// once overflowed the check and read past the inputs).
TEST(ControlFlow, AHostileNodeCountIsAnErrorNotACrash) {
  const Tensor w = randn({3});
  auto fn = [w](const Tensor& x) { return branchy(x, w); };
  const std::vector<uint8_t> bytes = export_program(fn, {rand({4, 3})}).to_bytes();
  io::SafetensorsFile file = io::from_safetensors_bytes(bytes);
  std::string& json = file.metadata["kiln.program"];
  const size_t node = json.find("\"op\":\"cond\"");
  ASSERT_NE(node, std::string::npos);
  size_t at = json.find("\"attrs\":[", node);
  for (int k = 0; k < 4; ++k) at = json.find("{\"int\":", at + 1);  // the fourth: captured count
  const size_t end = json.find('}', at);
  json.replace(at, end - at + 1, "{\"int\":9223372036854775807}");
  const std::vector<uint8_t> hostile = io::to_safetensors_bytes(file.tensors, file.metadata);
  const ExportedProgram p = load_program_from_bytes(hostile.data(), hostile.size());
  EXPECT_NE(error_of([&] { p.run({rand({4, 3})}); }).find("do not hold"), std::string::npos);
}

TEST(ControlFlow, BranchesMustAgreeAndMayReadOuterValues) {
  auto shapes = [](const Tensor& x) {
    return cond(
        x.sum() > 0, [](const Tensors& v) { return Tensors{v[0]}; },
        [](const Tensors& v) { return Tensors{v[0].sum(0)}; }, {x})[0];
  };
  const std::string e = error_of([&] { export_program(shapes, {rand({4, 3})}); });
  EXPECT_NE(e.find("cond: false_fn's result 0 is float32[3] but true_fn's is float32[4, 3]"),
            std::string::npos)
      << e;
  // A tensor the enclosing code computed is lifted into the node's inputs.
  auto closure = [](const Tensor& x) {
    const Tensor y = x * 2;
    return cond(
        x.sum() > 0, [&y](const Tensors& v) { return Tensors{v[0] + y}; },
        [](const Tensors& v) { return Tensors{v[0]}; }, {x})[0];
  };
  const ExportedProgram p = round_trip(export_program(closure, {rand({4, 3})}));
  const Tensor pos = rand({4, 3}), neg = -rand({4, 3});
  EXPECT_TRUE(allclose(p.run({pos})[0], pos * 3));
  EXPECT_TRUE(allclose(p.run({neg})[0], neg));
}

// x doubled until its sum reaches `limit`, counting the steps.
Tensors doubling(const Tensor& x, const Tensor& limit) {
  return while_loop([&limit](const Tensors& c) { return c[1].sum() < limit; },
                    [](const Tensors& c) {
                      return Tensors{c[0] + 1, c[1] * 2};
                    },
                    {zeros({}, kInt64), x});
}

TEST(ControlFlow, WhileLoopEagerExportedAndCompiled) {
  const Tensor x = full({3}, 0.5);
  Tensors eager = doubling(x, scalar_tensor(20.0));
  EXPECT_EQ(eager[0].item<int64_t>(), 4);  // 1.5 -> 3 -> 6 -> 12 -> 24
  EXPECT_TRUE(allclose(eager[1], full({3}, 8.0)));
  auto fn = [](const Tensor& x, const Tensor& limit) {
    Tensors r = doubling(x, limit);
    return std::make_tuple(r[0], r[1]);
  };
  ExportedProgram p = round_trip(
      export_program(fn, {full({3}, 0.5), scalar_tensor(20.0)}, {{{0, Dim("n", 2, 100)}}}));
  EXPECT_EQ(p.op_counts().at("while_loop"), 1);
  for (double limit : {0.0, 20.0, 1000.0}) {
    const Tensor y = rand({5}) + 0.1, l = scalar_tensor(limit);
    const Tensors want = doubling(y, l), got = p.run({y, l});
    EXPECT_EQ(got[0].item<int64_t>(), want[0].item<int64_t>()) << limit;
    EXPECT_TRUE(allclose(got[1], want[1])) << limit;
  }
  p.compile();  // the loop keeps the compiled function eager; the results stay right
  const Tensors got = p.run({full({4}, 0.5), scalar_tensor(20.0)});
  EXPECT_EQ(got[0].item<int64_t>(), 4);  // sums 2 -> 4 -> 8 -> 16 -> 32
}

TEST(ControlFlow, CompileRunsATracedPredicateEagerly) {
  const Tensor w = randn({3});
  auto compiled = kiln::compile([w](const Tensor& x) { return branchy(x, w); });
  for (const Tensor& x : {rand({4, 3}), -rand({4, 3})})
    EXPECT_TRUE(allclose(compiled(x), branchy(x, w)));
  EXPECT_NE(error_of([&] {
              auto strict = kiln::compile([w](const Tensor& x) { return branchy(x, w); },
                                          CompileOptions().fullgraph(true));
              strict(rand({4, 3}));
            }).find("export_program captures it"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
