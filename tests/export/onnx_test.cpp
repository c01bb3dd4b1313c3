// kiln::onnx::save: exported programs written as ONNX run in onnxruntime and give Kiln's eager
// outputs at sizes other than the example's. onnxruntime runs in a Python (run_onnx.py, found
// through KILN_ONNXRUNTIME_PYTHON, default python3); without one the comparisons skip, saying why.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/export/onnx.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/export/export_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// ---- .npy files, the format run_onnx.py reads and writes ----

const char* npy_descr(ScalarType t) {
  switch (t) {
    case kFloat32:
      return "<f4";
    case kFloat64:
      return "<f8";
    case kInt64:
      return "<i8";
    case kBool:
      return "|b1";
    default:
      ADD_FAILURE() << "no .npy type for " << t;
      return "<f4";
  }
}

void write_npy(const Tensor& t, const fs::path& path) {
  const Tensor c = t.contiguous();
  std::string shape = "(";
  for (int64_t d : c.sizes()) shape += std::to_string(d) + ",";
  shape += ")";
  std::string header = std::string("{'descr': '") + npy_descr(c.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // The magic, version and length take 10 bytes; the header ends in '\n' at a multiple of 64.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t n = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&n), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
}

Tensor read_npy(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  char magic[8];
  f.read(magic, 8);
  uint32_t n = 0;
  if (magic[6] == 1) {
    uint16_t n16 = 0;
    f.read(reinterpret_cast<char*>(&n16), 2);
    n = n16;
  } else {
    f.read(reinterpret_cast<char*>(&n), 4);
  }
  std::string header(n, '\0');
  f.read(header.data(), n);
  const std::map<std::string, ScalarType> types{
      {"<f4", kFloat32}, {"<f8", kFloat64}, {"<i8", kInt64}, {"|b1", kBool}};
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  const size_t d = header.find("'descr': '") + 10;
  const ScalarType dtype = types.at(header.substr(d, 3));
  std::vector<int64_t> shape;
  std::istringstream dims(header.substr(header.find('(') + 1));
  for (int64_t v; dims >> v;) {
    shape.push_back(v);
    dims.ignore(1);  // ','
  }
  Tensor t = empty(shape, kiln::dtype(dtype));
  f.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  return t;
}

// ---- onnxruntime through run_onnx.py ----

std::string script() { return (fs::path(__FILE__).parent_path() / "run_onnx.py").string(); }

std::string python() {
  const char* p = std::getenv("KILN_ONNXRUNTIME_PYTHON");
  return p && *p ? p : "python3";
}

// Runs `command`; returns its exit status and what it printed.
std::pair<int, std::string> shell(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buf[4096];
  while (size_t k = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, k);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Why onnxruntime cannot run here ("" when it can); asked once.
const std::string& onnxruntime_missing() {
  static const std::string why = [] {
    auto [status, out] = shell("'" + python() + "' '" + script() + "' --probe");
    if (status == 0) return std::string();
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return "onnxruntime is not available (set KILN_ONNXRUNTIME_PYTHON to a Python with "
           "onnxruntime and numpy, e.g. `python3 -m venv /opt/onnxrt && /opt/onnxrt/bin/pip "
           "install onnxruntime numpy onnx`): " +
           out;
  }();
  return why;
}

#define SKIP_WITHOUT_ONNXRUNTIME()                                             \
  do {                                                                         \
    if (!onnxruntime_missing().empty()) GTEST_SKIP() << onnxruntime_missing(); \
  } while (0)

// A directory of its own for one model.
fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("kiln_onnx_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

struct OnnxRun {
  std::vector<Tensor> outputs;
  std::string signature;  // run_onnx.py's signature.txt
};

OnnxRun run_onnx(const fs::path& model, const std::vector<Tensor>& inputs, size_t num_outputs) {
  const fs::path dir = model.parent_path() / "io";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (size_t i = 0; i < inputs.size(); ++i)
    write_npy(inputs[i], dir / ("input_" + std::to_string(i) + ".npy"));
  const auto [status, out] = shell("'" + python() + "' '" + script() + "' '" + model.string() +
                                   "' '" + dir.string() + "'");
  OnnxRun r;
  EXPECT_EQ(status, 0) << out;
  if (status != 0) return r;
  for (size_t i = 0; i < num_outputs; ++i)
    r.outputs.push_back(read_npy(dir / ("output_" + std::to_string(i) + ".npy")));
  std::ifstream sig(dir / "signature.txt");
  r.signature.assign(std::istreambuf_iterator<char>(sig), {});
  return r;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  double tol = 1e-4) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.to(kFloat64), w = want.to(kFloat64);
  const double diff = g.numel() ? (g - w).abs().max().item<double>() : 0.0;
  EXPECT_TRUE(allclose(g, w, tol, tol)) << what << ": max abs difference " << diff;
}

// Saves `program`, runs it in onnxruntime on each set of inputs and compares with `eager`.
template <class F>
std::string check_program(const std::string& name, const ExportedProgram& program,
                          const std::vector<std::vector<Tensor>>& input_sets, F eager) {
  const fs::path model = temp_dir(name) / (name + ".onnx");
  onnx::save(program, model.string());
  std::string signature;
  for (const std::vector<Tensor>& inputs : input_sets) {
    NoGradGuard no_grad;
    const std::vector<Tensor> want = eager(inputs);
    const OnnxRun got = run_onnx(model, inputs, want.size());
    if (got.outputs.size() != want.size()) return signature;
    std::string shape;
    for (const Tensor& t : inputs) shape += detail::str_cat(t.sizes(), " ");
    for (size_t i = 0; i < want.size(); ++i)
      expect_close(got.outputs[i], want[i], name + " output " + std::to_string(i) + " at " + shape);
    signature = got.signature;
  }
  fs::remove_all(model.parent_path());
  return signature;
}

using testing::error_of;

template <class Tuple>
std::vector<Tensor> as_vector(const Tuple& t) {
  return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
}

// ---- models ----

TEST(Onnx, MlpWithDynamicBatch) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(0);
  auto mlp = nn::Sequential(nn::Linear(4, 16), nn::GELU(), nn::Linear(16, 16), nn::Tanh(),
                            nn::Linear(16, 3));
  const ExportedProgram p = export_program(mlp, {randn({8, 4})}, {{{0, Dim("batch", 2, 64)}}});
  const std::string sig = check_program(
      "mlp", p, {{randn({3, 4})}, {randn({17, 4})}},
      [&](const std::vector<Tensor>& in) { return std::vector{mlp->forward(in[0])}; });
  EXPECT_NE(sig.find("input_0 float32 batch,4"), std::string::npos) << sig;
  EXPECT_NE(sig.find("output_0 float32 batch,3"), std::string::npos) << sig;
}

TEST(Onnx, CnnWithBatchNormAndPooling) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(1);
  auto cnn = nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
      nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).stride(2).groups(2)), nn::ReLU(),
      nn::AvgPool2d(nn::AvgPool2dOptions(2).stride(1).padding(1).count_include_pad(false)),
      nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::Linear(16, 5));
  {
    // Running statistics that are not the identity, so the export must use them.
    NoGradGuard no_grad;
    for (auto& item : cnn->named_buffers()) {
      if (item.key().find("running_mean") != std::string::npos) item.value().copy_(randn({8}));
      if (item.key().find("running_var") != std::string::npos) item.value().copy_(rand({8}) + 0.5);
    }
  }
  cnn->eval();
  const ExportedProgram p =
      export_program(cnn, {randn({4, 3, 16, 16})}, {{{0, Dim("batch", 2, 64)}}});
  check_program("cnn", p, {{randn({2, 3, 16, 16})}, {randn({5, 3, 16, 16})}},
                [&](const std::vector<Tensor>& in) { return std::vector{cnn->forward(in[0])}; });
}

TEST(Onnx, TransformerEncoderLayerWithDynamicSeqAndBatch) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(2);
  auto layer = nn::TransformerEncoderLayer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  layer->eval();
  auto fn = [&](const Tensor& x) { return layer->forward(x); };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p = export_program(fn, {randn({5, 3, 8})}, {{{0, seq}, {1, batch}}});
  const std::string sig =
      check_program("encoder", p, {{randn({5, 3, 8})}, {randn({11, 2, 8})}},
                    [&](const std::vector<Tensor>& in) { return std::vector{fn(in[0])}; });
  EXPECT_NE(sig.find("input_0 float32 seq,batch,8"), std::string::npos) << sig;
}

TEST(Onnx, PreNormGeluEncoderLayerBatchFirst) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(3);
  auto layer = nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(16, 4)
                                               .dim_feedforward(32)
                                               .dropout(0.0)
                                               .activation("gelu")
                                               .norm_first(true)
                                               .batch_first(true));
  layer->eval();
  auto fn = [&](const Tensor& x) { return layer->forward(x); };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p = export_program(fn, {randn({3, 6, 16})}, {{{0, batch}, {1, seq}}});
  check_program("prenorm", p, {{randn({2, 6, 16})}, {randn({4, 13, 16})}},
                [&](const std::vector<Tensor>& in) { return std::vector{fn(in[0])}; });
}

// Attention's decomposition with each kind of mask, and with key/value heads shared by groups
// of query heads.
TEST(Onnx, AttentionWithMasksCausalAndGroupedHeads) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(4);
  auto fn = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& allowed,
               const Tensor& bias) {
    return std::make_tuple(scaled_dot_product_attention(q, k, v, {}, 0, true),
                           scaled_dot_product_attention(q, k, v, allowed),
                           scaled_dot_product_attention(q, k, v, bias, 0, false, 0.3),
                           scaled_dot_product_attention(q, k.narrow(1, 0, 2), v.narrow(1, 0, 2), {},
                                                        0, false, std::nullopt, true));
  };
  auto inputs = [](int64_t b, int64_t s) {
    const Tensor allowed = (rand({s, s}) > 0.5).logical_or(eye(s).to(kBool));
    return std::vector{randn({b, 4, s, 8}), randn({b, 4, s, 8}), randn({b, 4, s, 8}), allowed,
                       randn({s, s})};
  };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const std::map<int64_t, Dim> qkv{{0, batch}, {2, seq}}, square{{0, seq}, {1, seq}};
  using nn::attention::SDPBackend;
  // The flash kernel's op, and the math one's (which also returns the attention weights).
  for (auto [backend, op] :
       {std::pair{SDPBackend::flash_attention, "_scaled_dot_product_flash_attention_for_cpu"},
        std::pair{SDPBackend::math, "scaled_dot_product_attention"}}) {
    const ExportedProgram p = [&] {
      nn::attention::sdpa_kernel only(backend);
      return export_program(fn, inputs(2, 5), {qkv, qkv, qkv, square, square});
    }();
    EXPECT_EQ(p.op_counts().count(op), 1u) << p.str();
    check_program("attention", p, {inputs(3, 4), inputs(2, 9)}, [&](const std::vector<Tensor>& in) {
      auto [a, b, c, d] = fn(in[0], in[1], in[2], in[3], in[4]);
      return std::vector{a, b, c, d};
    });
  }
}

TEST(Onnx, BidirectionalTwoLayerLstm) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(4);
  auto lstm = nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  lstm->eval();
  auto fn = [&](const Tensor& x) {
    auto [y, state] = lstm->forward(x);
    return std::make_tuple(y, std::get<0>(state), std::get<1>(state));
  };
  auto eager = [&](const std::vector<Tensor>& in) {
    auto [y, h, c] = fn(in[0]);
    return std::vector{y, h, c};
  };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p = export_program(fn, {randn({5, 3, 4})}, {{{0, seq}, {1, batch}}});
  const std::string sig = check_program("lstm", p, {{randn({5, 3, 4})}, {randn({9, 2, 4})}}, eager);
  EXPECT_NE(sig.find("output_1 float32 4,batch,6"), std::string::npos) << sig;
}

TEST(Onnx, LstmWithInitialStateBatchFirst) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(5);
  auto lstm = nn::LSTM(nn::LSTMOptions(3, 5).num_layers(2).batch_first(true));
  lstm->eval();
  auto fn = [&](const Tensor& x, const Tensor& h0, const Tensor& c0) {
    return std::get<0>(lstm->forward(x, std::make_tuple(h0, c0)));
  };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p =
      export_program(fn, {randn({3, 4, 3}), randn({2, 3, 5}), randn({2, 3, 5})},
                     {{{0, batch}, {1, seq}}, {{1, batch}}, {{1, batch}}});
  check_program(
      "lstm_state", p,
      {{randn({2, 7, 3}), randn({2, 2, 5}), randn({2, 2, 5})},
       {randn({6, 3, 3}), randn({2, 6, 5}), randn({2, 6, 5})}},
      [&](const std::vector<Tensor>& in) { return std::vector{fn(in[0], in[1], in[2])}; });
}

TEST(Onnx, BidirectionalTwoLayerGruBatchFirst) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(6);
  auto gru = nn::GRU(nn::GRUOptions(4, 5).num_layers(2).bidirectional(true).batch_first(true));
  gru->eval();
  auto fn = [&](const Tensor& x) { return gru->forward(x); };
  auto eager = [&](const std::vector<Tensor>& in) {
    auto [y, h] = fn(in[0]);
    return std::vector{y, h};
  };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p = export_program(fn, {randn({3, 5, 4})}, {{{0, batch}, {1, seq}}});
  check_program("gru", p, {{randn({3, 5, 4})}, {randn({2, 12, 4})}}, eager);
}

TEST(Onnx, SimpleRnnReluAndTanh) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(7);
  auto tanh_rnn = nn::RNN(nn::RNNOptions(4, 5).num_layers(2));
  auto relu_rnn = nn::RNN(nn::RNNOptions(4, 5).nonlinearity(kReLU).bidirectional(true));
  auto fn = [&](const Tensor& x) {
    return std::get<0>(tanh_rnn->forward(x)) + std::get<0>(relu_rnn->forward(x)).narrow(2, 0, 5);
  };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  const ExportedProgram p = export_program(fn, {randn({5, 3, 4})}, {{{0, seq}, {1, batch}}});
  check_program("rnn", p, {{randn({4, 2, 4})}, {randn({8, 5, 4})}},
                [&](const std::vector<Tensor>& in) { return std::vector{fn(in[0])}; });
}

// Sizes derived from the dynamic dims (flattening, splitting, filling) are computed in the model.
TEST(Onnx, SizeArithmeticOnDynamicDims) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(8);
  auto fn = [](const Tensor& x, const Tensor& y) {
    const Tensor flat = x.flatten(0, 1);                         // [batch*seq, 4]
    const Tensor halves = cat({flat, flat * 2}, 0).softmax(-1);  // [2*batch*seq, 4]
    const Tensor mask = y > 0;
    const Tensor picked = where(mask, x, zeros_like(x)).sum(1);  // [batch, 4]
    const Tensor head = x.narrow(1, 1, 2).permute({1, 0, 2}).reshape({-1});
    return std::make_tuple(halves.log(), picked * y.mean(), head, x.var(IntArrayRef{1}, true, true),
                           layer_norm(x, {4}).amax(-1));
  };
  const Dim batch("batch", 2, 64), seq("seq", 3, 64);
  const ExportedProgram p = export_program(fn, {randn({4, 5, 4}), randn({4, 5, 4})},
                                           {{{0, batch}, {1, seq}}, {{0, batch}, {1, seq}}});
  auto eager = [&](const std::vector<Tensor>& in) {
    auto [a, b, c, d, e] = fn(in[0], in[1]);
    return std::vector{a, b, c, d, e};
  };
  const std::string sig = check_program(
      "sizes", p, {{randn({3, 6, 4}), randn({3, 6, 4})}, {randn({7, 3, 4}), randn({7, 3, 4})}},
      eager);
  EXPECT_NE(sig.find("output_0 float32 2*batch*seq,4"), std::string::npos) << sig;
}

// ---- the wider op set ----

TEST(Onnx, Activations) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(10);
  auto fn = [](const Tensor& x) {
    return std::make_tuple(relu6(x * 4), hardtanh(x, -0.5, 0.7), silu(x), mish(x),
                           softplus(x, 2, 1), logsigmoid(x), elu(x, 0.7), selu(x),
                           leaky_relu(x, 0.2), hardsigmoid(x * 3), hardswish(x * 3),
                           gelu(x, "tanh"), x.sigmoid() * x.tanh(), x.log_softmax(-1), x.softmax(0),
                           x.relu(), x);  // an input as an output too
  };
  const ExportedProgram p = export_program(fn, {randn({4, 6})}, {{{0, Dim("batch")}}});
  check_program("activations", p, {{randn({3, 6})}, {randn({9, 6})}},
                [&](const std::vector<Tensor>& in) { return as_vector(fn(in[0])); });
}

TEST(Onnx, ArithmeticComparisonsAndRounding) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(11);
  auto fn = [](const Tensor& x, const Tensor& y) {
    const Tensor ints = (x * 10).to(kInt64);
    const Tensor pos = x.abs() + 0.5;
    return std::make_tuple(
        div(x, y, "floor"), div(x, y, "trunc"), x.remainder(y), x.fmod(y), div(ints, 3, "floor"),
        ints.remainder(3), clamp(x, -0.3, 0.4), lerp(x, y, 0.3), addcmul(x, x, y, 0.5),
        addcdiv(x, x, y, 2), where(x > y, x, y), masked_fill(x, x < 0, 0.25),
        (x >= y).logical_and(x != y), (x <= y).logical_or(x == y), pos.rsqrt() + pos.log1p(),
        x.expm1() + pos.log2() + pos.log10() + x.exp2(), x.erfc(), (x * 3).trunc(), (x * 3).frac(),
        round(x * 7, 1), (x * 7).round(), x.pow(2) + pos.pow(y), x.maximum(y) - x.minimum(y),
        x.square() + y.reciprocal(), x.neg().abs().sqrt(), x.floor() + x.ceil() + x.sign(),
        x.sin() + x.cos() + x.atan(), 1 - x / 3 - y * 2);
  };
  auto inputs = [](int64_t n) {
    const Tensor y = randn({n, 6});
    return std::vector{randn({n, 6}), y + y.sign() * 0.5};  // no zero divisors
  };
  const ExportedProgram p =
      export_program(fn, inputs(4), {{{0, Dim("batch")}}, {{0, Dim("batch")}}});
  check_program("arithmetic", p, {inputs(3), inputs(8)},
                [&](const std::vector<Tensor>& in) { return as_vector(fn(in[0], in[1])); });
}

TEST(Onnx, ReductionsAndIndexing) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(12);
  const Tensor idx = tensor(std::vector<int64_t>{4, 0, 2});
  const Tensor table = randn({10, 3});
  auto fn = [&](const Tensor& x, const Tensor& tokens) {
    return std::make_tuple(
        x.sum(), x.mean({1}), x.amax({-1}, true), x.amin({0, 2}), x.prod(2), x.logsumexp({2}),
        x.max() + x.min(), std::get<0>(x.max(1)), std::get<1>(x.min(2)), x.argmax(-1), x.argmin(),
        x.var({1}), x.std(IntArrayRef{2}, false, true), x.norm(2, {2}), x.norm(1, {1}), x.cumsum(1),
        x.tril(), x.triu(1), x.flip({1}), pad(x, {1, 2}, "reflect"),
        pad(x, {1, 1, 2, 0}, "constant", 0.5), pad(x, {2, 1}, "replicate"), x.repeat({1, 2, 1}),
        x.index_select(2, idx), x.gather(2, idx.view({1, 1, 3}).expand({x.sym_size(0), 5, 3})),
        embedding(table, tokens), (x > 0).all(-1), (x > 1).any(1));
  };
  auto inputs = [](int64_t n) { return std::vector{randn({n, 5, 6}), randint(0, 10, {n, 4})}; };
  const Dim batch("batch");
  const ExportedProgram p = export_program(fn, inputs(4), {{{0, batch}}, {{0, batch}}});
  check_program("reductions", p, {inputs(3), inputs(7)},
                [&](const std::vector<Tensor>& in) { return as_vector(fn(in[0], in[1])); });
}

TEST(Onnx, NormsTransposedConvPoolingAndResize) {
  SKIP_WITHOUT_ONNXRUNTIME();
  manual_seed(13);
  auto gn = nn::GroupNorm(2, 4);
  auto rms = nn::RMSNorm(nn::RMSNormOptions({6}));
  auto ln = nn::LayerNorm(nn::LayerNormOptions({6}).elementwise_affine(false));
  auto up = nn::ConvTranspose2d(
      nn::ConvTranspose2dOptions(4, 3, 3).stride(2).padding(1).output_padding(1));
  auto conv1d = nn::Conv1d(nn::Conv1dOptions(4, 2, 3).dilation(2).bias(false));
  auto fn = [&](const Tensor& x) {
    return std::make_tuple(gn(x), rms(x), ln(x), up(x), conv1d(x.flatten(2)),
                           adaptive_avg_pool2d(x, {3, 2}), std::get<0>(adaptive_max_pool2d(x, 1)),
                           max_pool2d(x, 3, 2, 1, 1, true), upsample_nearest2d(x, {12, 9}),
                           upsample_bilinear2d(x, {9, 12}, false),
                           upsample_bilinear2d(x, {12, 12}, true));
  };
  const ExportedProgram p = export_program(fn, {randn({2, 4, 6, 6})}, {{{0, Dim("batch")}}});
  check_program("norms", p, {{randn({3, 4, 6, 6})}, {randn({5, 4, 6, 6})}},
                [&](const std::vector<Tensor>& in) { return as_vector(fn(in[0])); });
}

// ---- errors ----

TEST(Onnx, OpWithoutTranslationIsAnErrorNamingItAndTheSupportedOps) {
  auto fn = [](const Tensor& x) { return x.cumprod(0) + 1; };
  const ExportedProgram p = export_program(fn, {randn({4, 3})});
  const std::string e = error_of([&] { onnx::to_bytes(p); });
  EXPECT_NE(e.find("\"cumprod\""), std::string::npos) << e;
  EXPECT_NE(e.find("has no ONNX translation"), std::string::npos) << e;
  EXPECT_NE(e.find("addmm"), std::string::npos) << e;
  EXPECT_NE(e.find("lstm"), std::string::npos) << e;
  const std::vector<std::string> ops = onnx::supported_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const std::string& op : ops) EXPECT_NE(find_op(op), nullptr) << op << " is not an op";
  for (const char* op : {"addmm", "convolution", "batch_norm", "layer_norm", "softmax", "lstm",
                         "gru", "view", "permute", "_scaled_dot_product_flash_attention_for_cpu"})
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), op) != ops.end()) << op;
}

TEST(Onnx, TrainingModeBatchNormIsAnError) {
  auto bn = nn::BatchNorm1d(4);
  bn->train();
  const ExportedProgram p = export_program(bn, {randn({8, 4})});
  const std::string e = error_of([&] { onnx::to_bytes(p); });
  EXPECT_NE(e.find("batch_norm"), std::string::npos) << e;
  EXPECT_NE(e.find("eval()"), std::string::npos) << e;
}

TEST(Onnx, SaveWritesTheSameBytesAsToBytes) {
  manual_seed(9);
  auto mlp = nn::Sequential(nn::Linear(4, 8), nn::ReLU());
  const ExportedProgram p = export_program(mlp, {randn({2, 4})}, {{{0, Dim("batch")}}});
  const fs::path path = temp_dir("bytes") / "m.onnx";
  onnx::save(p, path.string());
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(file, onnx::to_bytes(p));
  // The parameters are initializers under their names.
  const std::string text(file.begin(), file.end());
  EXPECT_NE(text.find("0.weight"), std::string::npos);
  EXPECT_NE(text.find("batch"), std::string::npos);
  fs::remove_all(path.parent_path());
}

}  // namespace
}  // namespace kiln
