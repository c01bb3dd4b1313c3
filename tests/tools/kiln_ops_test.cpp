// Runs the built `kiln ops --json` and checks its output against the op registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "kiln/core/device_backend.h"
#include "kiln/func/batching_rules.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"

namespace {

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  r.status = pclose(pipe);
  return r;
}

const std::string kKiln = KILN_CLI_PATH;

TEST(KilnOps, JsonIsAnArrayOfOneObjectPerRegisteredOp) {
  CommandResult r = run("'" + kKiln + "' ops --json");
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json ops = nlohmann::json::parse(r.output);  // throws (fails the test) if not JSON
  ASSERT_TRUE(ops.is_array());

  const std::set<std::string> columns = {"name",     "meta", "cpu",  "cuda",
                                         "backward", "jvp",  "vmap", "lowering"};
  std::set<std::string> names;
  for (const nlohmann::json& op : ops) {
    ASSERT_TRUE(op.is_object()) << op.dump();
    std::set<std::string> keys;
    for (const auto& [key, value] : op.items()) {
      keys.insert(key);
      if (key == "name" || key == "vmap") {
        EXPECT_TRUE(value.is_string()) << op.dump();
      } else {
        EXPECT_TRUE(value.is_boolean()) << key << " in " << op.dump();
      }
    }
    EXPECT_EQ(keys, columns) << op.dump();
    EXPECT_TRUE(names.insert(op["name"].get<std::string>()).second)
        << "duplicate op " << op["name"];
    EXPECT_TRUE(op["meta"].get<bool>()) << op["name"] << " has no meta function";
  }

  std::set<std::string> registered;
  for (const kiln::OpDef* op : kiln::all_ops()) registered.insert(op->name);
  EXPECT_EQ(names, registered);
}

TEST(KilnOps, JsonColumnsReflectTheRegistry) {
  nlohmann::json ops = nlohmann::json::parse(run("'" + kKiln + "' ops --json").output);
  kiln::load_device_backends();  // as `kiln ops` does: their kernels fill the device columns
  for (const kiln::OpDef* def : kiln::all_ops()) {
    auto it = std::find_if(ops.begin(), ops.end(),
                           [&](const nlohmann::json& o) { return o["name"] == def->name; });
    ASSERT_NE(it, ops.end()) << def->name;
    EXPECT_EQ((*it)["backward"].get<bool>(), def->differentiable()) << def->name;
    EXPECT_EQ((*it)["cuda"].get<bool>(), def->has_kernel(kiln::kCUDA)) << def->name;
    EXPECT_EQ((*it)["lowering"].get<bool>(), !def->lowering_.empty()) << def->name;
    EXPECT_EQ((*it)["jvp"].get<bool>(), def->differentiable() && def->backward_differentiable)
        << def->name;
    EXPECT_EQ((*it)["vmap"].get<std::string>(),
              kiln::func::detail::to_string(kiln::func::detail::batch_rule_kind(*def)))
        << def->name;
  }
  // add is the reference op: meta, CPU kernel and backward all exist.
  auto add = std::find_if(ops.begin(), ops.end(),
                          [](const nlohmann::json& o) { return o["name"] == "add"; });
  ASSERT_NE(add, ops.end());
  EXPECT_TRUE((*add)["cpu"].get<bool>());
  EXPECT_TRUE((*add)["backward"].get<bool>());
}

// Facts about particular ops, stated here rather than read from the registry, so that a printer
// that mislabels or swaps columns fails.
TEST(KilnOps, KnownOpsShowTheirKnownColumns) {
  nlohmann::json ops = nlohmann::json::parse(run("'" + kKiln + "' ops --json").output);
  struct Known {
    const char* name;
    bool backward, lowering, jvp;
    const char* vmap;
  };
  const Known known[] = {
      {"add", true, true, true, "pointwise"},  {"mm", true, true, true, "rule"},
      {"gelu", true, true, true, "pointwise"}, {"sum", true, true, true, "dims"},
      {"lstm", true, true, false, "loop"},     {"argmax", false, true, false, "dims"},
      {"nonzero", false, true, false, "loop"}, {"randn", false, false, false, "loop"},
      {"detach", false, true, false, "dims"},  {"eq", false, true, false, "pointwise"}};
  for (const Known& k : known) {
    auto it = std::find_if(ops.begin(), ops.end(),
                           [&](const nlohmann::json& o) { return o["name"] == k.name; });
    ASSERT_NE(it, ops.end()) << k.name;
    EXPECT_TRUE((*it)["meta"].get<bool>()) << k.name;
    EXPECT_TRUE((*it)["cpu"].get<bool>()) << k.name;
    EXPECT_EQ((*it)["backward"].get<bool>(), k.backward) << k.name;
    EXPECT_EQ((*it)["lowering"].get<bool>(), k.lowering) << k.name;
    EXPECT_EQ((*it)["jvp"].get<bool>(), k.jvp) << k.name;
    EXPECT_EQ((*it)["vmap"].get<std::string>(), k.vmap) << k.name;
  }
}

TEST(KilnOps, TableHasOneRowPerOpAndACount) {
  CommandResult r = run("'" + kKiln + "' ops");
  ASSERT_EQ(r.status, 0) << r.output;
  size_t count = kiln::all_ops().size();
  EXPECT_NE(r.output.find(std::to_string(count) + " ops\n"), std::string::npos) << r.output;
  for (const kiln::OpDef* op : kiln::all_ops()) {
    EXPECT_NE(r.output.find("\n" + op->name + " "), std::string::npos) << op->name;
  }
}

TEST(KilnOps, UnknownCommandPrintsUsageAndFails) {
  CommandResult r = run("'" + kKiln + "' frobnicate 2>&1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("usage: kiln"), std::string::npos) << r.output;
}

TEST(KilnInspect, PrintsTheSignatureConstraintsAndOpCountsAndExportsOnnx) {
  const kiln::Tensor w = kiln::randn({4, 3});
  auto fn = [w](const kiln::Tensor& x) {
    return kiln::relu(x.matmul(w)) + kiln::relu(x.matmul(w) * 2);
  };
  const std::string path = ::testing::TempDir() + "inspect.kpt";
  kiln::export_program(fn, {kiln::randn({8, 4})}, {{{0, kiln::Dim("batch", 2, 32)}}}).save(path);
  CommandResult r = run("'" + kKiln + "' inspect '" + path + "' 2>&1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("input inputs[0]: float32[batch, 4]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("constant _tensor_constant0: float32[4, 3]"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("range batch in [2, 32]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("relu                     2"), std::string::npos) << r.output;
  const std::string onnx = ::testing::TempDir() + "inspect.onnx";
  r = run("'" + kKiln + "' export --onnx '" + path + "' '" + onnx + "' 2>&1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_GT(std::filesystem::file_size(onnx), 48u);  // the weights and the graph
  std::remove(onnx.c_str());
  r = run("'" + kKiln + "' inspect /nonexistent.kpt 2>&1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("load_safetensors"), std::string::npos) << r.output;
  std::remove(path.c_str());
}

}  // namespace
