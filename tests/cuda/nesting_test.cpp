// The nesting guard in front of Clang (cuda/nesting.h).
#include <gtest/gtest.h>

#include <string>

#include "cuda/nesting.h"

namespace mlsem::cuda {
namespace {

std::string nested(const std::string& open, const std::string& close, size_t n, const std::string& inner) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += open;
  s += inner;
  for (size_t i = 0; i < n; ++i) s += close;
  return s;
}

TEST(CudaNesting, DeepTemplateArgumentsAndBracketsAreFoundWhereTheyPassTheLimit) {
  auto at = too_deep("template <typename T> struct W { T t; };\nusing N = " + nested("W<", ">", 300, "int") + ";\n");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->line, 2u);
  EXPECT_EQ(at->column, 12u + 2 * 256);  // the '<' of the 257th "W<" passes the limit of 256
  EXPECT_TRUE(too_deep("int x = " + nested("(", ")", 300, "1") + ";"));
  EXPECT_TRUE(too_deep("int x[] = " + nested("{", "}", 300, "1") + ";"));
  EXPECT_TRUE(too_deep("using N = " + nested("W< ", " >", 200, nested("(", ")", 100, "0")) + ";"));
  EXPECT_FALSE(too_deep("using N = " + nested("W<", ">", 250, "int") + ";"));
}

TEST(CudaNesting, ComparisonsCommentsAndLiteralsDoNotCount) {
  std::string code;
  for (int i = 0; i < 1000; ++i) code += "for (int i = 0; i < n; i++) if (a < b && c<d) x <<= 1;\n";
  code += "/* " + nested("(", "", 400, "") + " */\n// " + nested("<", "", 400, "") + "\n";
  code += "const char* s = \"" + nested("(", "", 400, "") + "\\\"((\";\nchar c = '(';\n";
  code += "#include <cuda_runtime.h>\n__global__ void k(float* y) { y[threadIdx.x] = a < b ? 1 : 2; }\n";
  EXPECT_FALSE(too_deep(code));
}

}  // namespace
}  // namespace mlsem::cuda
