// libFuzzer harness for the text form of FlexAttention's expression graphs
// (kiln/ops/nn/flex/expr_text.cpp), which an exported program stores and a loader reads back.
// Every input must either throw a kiln::Error or give a graph whose operands all come earlier,
// whose loads name a captured tensor that exists, whose result is a node, and whose text reads
// back to the same text. Built and run by fuzz/run.sh (make fuzz).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kiln/core/error.h"
#include "kiln/ops/nn/flex/expr.h"

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "flex_expr_fuzz: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::flex::Graph g;
  try {
    g = kiln::flex::Graph::parse(text);
  } catch (const kiln::Error& e) {
    if (std::string(e.what()).size() > 4096) broken("an error message longer than 4 KB");
    return 0;
  }
  const int32_t n = static_cast<int32_t>(g.nodes.size());
  if (g.result < 0 || g.result >= n) broken("result outside the graph");
  for (int32_t i = 0; i < n; ++i) {
    const kiln::flex::Node& node = g.nodes[i];
    for (int32_t a : node.args)
      if (a < 0 || a >= i) broken("an operand that does not come earlier");
    if (node.op == kiln::flex::Op::Load && (node.tensor < 0 || node.tensor >= g.captured))
      broken("a load of a captured tensor that does not exist");
  }
  const std::string again = g.to_string();
  if (kiln::flex::Graph::parse(again).to_string() != again) broken("text does not round-trip");
  return 0;
}
