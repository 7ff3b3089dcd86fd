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

TEST(RuntimeStrides, GenericStridedTensorIndexIsTheCallersLayout) {
  // ggml's pad: src[i03*s03 + i02*s02 + i01*s01 + i00*s00], i00 = global thread id - lp0,
  // i01 = blockIdx.y, i02 and i03 opaque terms of blockIdx.z.
  Poly pad = (global_thread_id() - sym("lp0")) * sym("s00") + sym("blockIdx.y") * sym("s01") +
             sym("{blockIdx.z % ne2}") * sym("s02") + sym("{blockIdx.z / ne2}") * sym("s03");
  EXPECT_TRUE(runtime_strides(pad, sym("s00")));
  // ggml's repeat_back: the same inside grid-stride loops (i0 = tid0 + ne0*i0').
  Poly i0 = global_thread_id() + sym("ne0") * sym("i0'");
  Poly back = i0 * sym("s00") + (sym("threadIdx.y") + sym("i1'")) * sym("s01") + sym("{tid2}") * sym("s02") +
              sym("{tid3}") * sym("s03");
  EXPECT_TRUE(runtime_strides(back, sym("s00")));
}

TEST(RuntimeStrides, RowLengthsAndUnitWalksAreRealLayouts) {
  Poly row = global_thread_id();
  // x[row*C]: one stride only.
  EXPECT_FALSE(runtime_strides(row * sym("C"), sym("C")));
  // x[row*C + i'] over a loop: the loop walks the row at unit stride.
  EXPECT_FALSE(runtime_strides(row * sym("C") + sym("i'") + sym("blockIdx.y") * sym("D") + sym("blockIdx.z") * sym("E"),
                               sym("C")));
  // inp[b*T*C + t*C + h*hs] with t the thread: b's term is a product of sizes.
  Poly attn = sym("blockIdx.y") * sym("T") * sym("C") + row * sym("C") + sym("blockIdx.z") * sym("hs");
  EXPECT_FALSE(runtime_strides(attn, sym("C")));
  // Two strides: not enough to call it generic strided-tensor code.
  EXPECT_FALSE(runtime_strides(row * sym("s0") + sym("blockIdx.y") * sym("s1"), sym("s0")));
  // A constant lane stride is the code's own.
  EXPECT_FALSE(runtime_strides(row * num(4) + sym("blockIdx.y") * sym("s1") + sym("blockIdx.z") * sym("s2"), num(4)));
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
