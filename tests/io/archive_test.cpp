// serialize::OutputArchive / InputArchive: nested keys, values, streams and files, and modules
// and optimizers through them.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Archive, NestedTensorsAndValuesRoundTripThroughAStream) {
  serialize::OutputArchive out, nested;
  out.write("weights", tensor({1.0f, 2.0f}));
  out.write("epoch", 7);
  out.write("lr", 0.125);
  out.write("name", "run-3");
  out.write("done", true);
  out.write("encoder", nested);
  nested.write("bias", tensor({3.0f}));  // written after nesting: still under "encoder."
  std::stringstream stream;
  out.save_to(stream);

  serialize::InputArchive in;
  in.load_from(stream);
  Tensor weights;
  in.read("weights", weights);
  EXPECT_TRUE(weights.equal(tensor({1.0f, 2.0f})));
  IValue v;
  in.read("epoch", v);
  EXPECT_EQ(v.toInt(), 7);
  in.read("lr", v);
  EXPECT_EQ(v.toDouble(), 0.125);
  in.read("name", v);
  EXPECT_EQ(v.toStringRef(), "run-3");
  in.read("done", v);
  EXPECT_TRUE(v.toBool());
  serialize::InputArchive encoder;
  in.read("encoder", encoder);
  Tensor bias = zeros({1});
  const Tensor alias = bias;
  encoder.read("bias", bias);
  EXPECT_EQ(alias[0].item<float>(), 3.0f);  // read into the tensor's own storage
  EXPECT_EQ(encoder.keys(), (std::vector<std::string>{"bias"}));

  Tensor missing;
  EXPECT_FALSE(in.try_read("nothing", missing));
  EXPECT_THROW(in.read("nothing", missing), Error);
  Tensor wrong = zeros({3});
  EXPECT_THROW(in.read("weights", wrong), Error);
}

TEST(Archive, ModuleAndOptimizerSaveAndLoad) {
  manual_seed(1);
  nn::Sequential model(nn::Linear(3, 4), nn::BatchNorm1d(4), nn::Linear(4, 2));
  optim::Adam adam(model->parameters(), optim::AdamOptions(0.01));
  model->forward(randn({5, 3})).sum().backward();
  adam.step();

  const std::string path = ::testing::TempDir() + "kiln_archive_test.pt";
  serialize::OutputArchive out, opt_out;
  model->save(out);
  out.write("optimizer", opt_out);
  adam.save(opt_out);
  out.save_to(path);

  manual_seed(2);
  nn::Sequential other(nn::Linear(3, 4), nn::BatchNorm1d(4), nn::Linear(4, 2));
  optim::Adam other_adam(other->parameters(), optim::AdamOptions(0.01));
  serialize::InputArchive in, opt_in;
  in.load_from(path);
  other->load(in);
  in.read("optimizer", opt_in);
  other_adam.load(opt_in);
  std::remove(path.c_str());

  const auto a = model->state_dict(), b = other->state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].value().equal(b[i].value())) << a[i].key();
  const auto sa = adam.state_dict(), sb = other_adam.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_TRUE(sa[i].value().equal(sb[i].value())) << sa[i].key();
}

TEST(Archive, SaveAndLoadThroughStreams) {
  nn::Linear a(2, 2), b(2, 2);
  std::stringstream stream;
  save(a, stream);
  load(b, stream);
  EXPECT_TRUE(a->weight.equal(b->weight));

  std::stringstream tensors;
  save(std::vector<Tensor>{tensor({1.0f}), tensor({2, 3})}, tensors);
  std::vector<Tensor> back;
  load(back, tensors);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[1].equal(tensor({2, 3})));

  std::stringstream damaged("not a file");
  Tensor t;
  EXPECT_THROW(load(t, damaged), Error);
}

}  // namespace
}  // namespace kiln
