// The index arithmetic behind the CUDA rules: polynomials, lane strides, bank conflicts.
#include <gtest/gtest.h>

#include "cuda/index.h"

namespace mlsem::cuda {
namespace {

Poly sym(const char* s) { return Poly::symbol(s); }
Poly num(int64_t c) { return Poly::constant(c); }

// row = blockIdx.x * blockDim.x + threadIdx.x: the global thread id.
Poly global_thread_id() { return sym("blockIdx.x") * sym("blockDim.x") + sym(kThreadX); }

TEST(Poly, ExpandsProductsAndCancelsTerms) {
  Poly a = sym("a"), b = sym("b");
  EXPECT_EQ(((a + b) * (a - b)).text(), "a*a - b*b");
  EXPECT_TRUE((a - a).is_zero());
  EXPECT_EQ((num(3) * a + num(2) - a).text(), "2*a + 2");
  EXPECT_EQ((num(4) * num(5)).as_constant(), 20);
}

TEST(Poly, CoefficientIsUndefinedWhenNotAffine) {
  Poly t = sym(kThreadX);
  EXPECT_FALSE((t * t).coefficient(kThreadX).has_value());
  EXPECT_EQ((num(7) * t + sym("n")).coefficient(kThreadX)->as_constant(), 7);
  EXPECT_TRUE(sym("n").coefficient(kThreadX)->is_zero());
}

TEST(Poly, SubstituteAndDivide) {
  Poly p = num(2) * sym("i") + num(1);
  EXPECT_EQ(p.substitute("i", num(3) * sym("k")).text(), "6*k + 1");
  EXPECT_EQ((num(4) * sym("C") + num(8)).divide(4)->text(), "C + 2");
  EXPECT_FALSE((num(4) * sym("C") + num(2)).divide(4).has_value());
  EXPECT_EQ((num(6) * sym("s") + num(9)).content(), 3);
}

TEST(LaneStride, RowPerThreadIndexStridesByRowLength) {
  // x[row * C + i], 4-byte floats: lanes are C elements apart.
  Poly bytes = (global_thread_id() * sym("C") + sym("i")) * num(4);
  LaneStride s = lane_stride(bytes, 4);
  ASSERT_TRUE(s.affine);
  ASSERT_TRUE(s.elements.has_value());
  EXPECT_EQ(s.elements->text(), "C");
  EXPECT_FALSE(s.constant.has_value());
}

TEST(LaneStride, GlobalThreadIdIsUnitStride) {
  LaneStride s = lane_stride(global_thread_id() * num(4), 4);
  ASSERT_TRUE(s.constant.has_value());
  EXPECT_EQ(*s.constant, 1);
}

TEST(LaneStride, Float4ElementsCountInVectors) {
  // reinterpret_cast<float4*>(x)[gtid]: 16 bytes per lane, one float4 apart.
  LaneStride s = lane_stride(global_thread_id() * num(16), 16);
  EXPECT_EQ(s.constant, 1);
}

TEST(LaneStride, BroadcastAndNonAffine) {
  EXPECT_EQ(lane_stride(sym("blockIdx.x") * num(4), 4).constant, 0);
  Poly t = sym(kThreadX);
  EXPECT_FALSE(lane_stride(t * t * num(4), 4).affine);
  // threadIdx.x * threadIdx.y: the coefficient still varies with the thread.
  EXPECT_FALSE(lane_stride(t * sym(kThreadY) * num(4), 4).affine);
}

TEST(BankConflicts, ColumnOfTileWithPitch32Or33Floats) {
  // tile[threadIdx.x][c]: neighbouring lanes are one row (pitch words) apart.
  EXPECT_EQ(bank_conflict_ways(32, 4), 32);
  EXPECT_EQ(bank_conflict_ways(33, 4), 1);
  EXPECT_EQ(bank_conflict_ways(1, 4), 1);
  EXPECT_EQ(bank_conflict_ways(2, 4), 2);
  EXPECT_EQ(bank_conflict_ways(0, 4), 1);  // all lanes read one word: a broadcast
}

TEST(BankConflicts, WideElementsAreServedInPhases) {
  // Consecutive doubles or float4s are conflict-free: 16 (or 8) lanes per phase.
  EXPECT_EQ(bank_conflict_ways(2, 8), 1);
  EXPECT_EQ(bank_conflict_ways(4, 16), 1);
  // A column of a double[32][32] tile: 64 words apart, 16 lanes of a phase in one bank pair.
  EXPECT_EQ(bank_conflict_ways(64, 8), 16);
}

TEST(BankConflicts, SymbolicStrideKeepsItsConstantFactor) {
  // s[2 * stride * tid]: 2*stride words apart, at least 2-way for every stride.
  Poly words = num(2) * sym("stride");
  EXPECT_EQ(bank_conflict_ways_min(words, 4), 2);
  EXPECT_EQ(bank_conflict_ways_min(num(16) * sym("k"), 4), 16);
  EXPECT_EQ(bank_conflict_ways_min(sym("k"), 4), 1);  // nothing guaranteed
}

}  // namespace
}  // namespace mlsem::cuda
