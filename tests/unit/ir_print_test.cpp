// The IR text dump: one line per node and region, attributes in key order.
#include <gtest/gtest.h>

#include <limits>

#include "ir/print.h"

namespace mlsem::ir {
namespace {

Range at(uint32_t l0, uint32_t c0, uint32_t l1, uint32_t c1) {
  Range r;
  r.begin = {l0, c0};
  r.end = {l1, c1};
  return r;
}

TEST(IrPrint, FunctionRegionsNodesDiagnosticsSuppressions) {
  Module m;
  m.path = "model.py";
  m.language = "python";
  Function f;
  f.name = "CausalSelfAttention.forward";
  f.range = at(41, 5, 63, 17);
  f.regions.push_back(Region{"function", 0, {}, f.range});
  f.regions.push_back(Region{"loop", 0, {{"training", true}}, at(50, 9, 60, 30)});
  f.regions.push_back(Region{"with", 1, {{"context", std::string("torch.no_grad")}}, at(51, 9, 52, 1)});
  f.nodes.push_back(Node{"input", {}, {{"name", std::string("q")}}, at(41, 23, 41, 24), 0});
  f.nodes.push_back(Node{"input", {}, {{"name", std::string("k")}}, at(41, 26, 41, 27), 0});
  f.nodes.push_back(Node{"matmul", {0, 1}, {}, at(52, 15, 52, 40), 1});
  f.nodes.push_back(Node{"scale", {2, 1}, {{"divide", true}, {"sqrt_like", true}}, at(52, 15, 52, 75), 1});
  f.nodes.push_back(Node{"softmax", {3}, {{"dim", int64_t{-1}}}, at(53, 1, 53, 9), 2});
  f.nodes.push_back(Node{"const", {}, {{"value", -std::numeric_limits<double>::infinity()},
                                       {"text", std::string("say \"hi\"")}}, at(54, 1, 54, 2), 0});
  f.nodes.push_back(Node{"const", {}, {{"value", 2.0}}, at(55, 1, 55, 2), 0});
  m.functions.push_back(f);
  m.diagnostics.push_back(Diagnostic{"model.py", at(3, 1, 3, 9), "syntax error"});
  m.suppressions[52] = {"ATT001", "FUS002"};
  m.suppressions[60] = {};

  EXPECT_EQ(to_text(m),
            "module model.py (python)\n"
            "function CausalSelfAttention.forward @41:5-63:17\n"
            "  region 1 loop training=true @50:9-60:30\n"
            "  region 2 with parent=1 context=\"torch.no_grad\" @51:9-52:1\n"
            "  %0 = input name=\"q\" @41:23-41:24\n"
            "  %1 = input name=\"k\" @41:26-41:27\n"
            "  %2 = matmul %0, %1 @52:15-52:40 in region 1\n"
            "  %3 = scale %2, %1 divide=true sqrt_like=true @52:15-52:75 in region 1\n"
            "  %4 = softmax %3 dim=-1 @53:1-53:9 in region 2\n"
            "  %5 = const text=\"say \\\"hi\\\"\" value=-inf @54:1-54:2\n"
            "  %6 = const value=2.0 @55:1-55:2\n"
            "diagnostic @3:1-3:9 syntax error\n"
            "suppress line 52: ATT001, FUS002\n"
            "suppress line 60: all\n");
}

TEST(IrPrint, InvalidRangeAndEmptyModule) {
  Module m;
  m.path = "x.cu";
  m.language = "cuda";
  Function f;
  f.name = "k";
  f.nodes.push_back(Node{"load", {}, {}, Range{}, 0});
  m.functions.push_back(f);
  EXPECT_EQ(to_text(m), "module x.cu (cuda)\nfunction k @?\n  %0 = load @?\n");
  EXPECT_EQ(attr_to_text(Attr{0.1}), "0.1");
  EXPECT_EQ(attr_to_text(Attr{int64_t{3}}), "3");
  EXPECT_EQ(attr_to_text(Attr{false}), "false");
}

}  // namespace
}  // namespace mlsem::ir
