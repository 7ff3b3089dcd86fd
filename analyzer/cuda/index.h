// Index expressions of CUDA memory accesses as integer polynomials over symbols
// (threadIdx.x, blockIdx.x, blockDim.x, parameters, loop iterations, opaque terms),
// and the arithmetic the rules need: the coefficient of threadIdx.x (a warp's lane
// stride), divisibility, and shared-memory bank conflicts. No Clang here, so the
// arithmetic is unit-tested on its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlsem::cuda {

// The symbol names the frontend gives the CUDA builtins.
inline constexpr const char* kThreadX = "threadIdx.x";
inline constexpr const char* kThreadY = "threadIdx.y";
inline constexpr const char* kThreadZ = "threadIdx.z";

// A sum of integer-coefficient monomials; a monomial is a sorted list of symbols
// (repeated for powers). The empty monomial is the constant term.
class Poly {
 public:
  using Monomial = std::vector<std::string>;

  Poly() = default;
  static Poly constant(int64_t c);
  static Poly symbol(const std::string& name);

  Poly operator+(const Poly& o) const;
  Poly operator-(const Poly& o) const;
  Poly operator*(const Poly& o) const;
  Poly operator-() const;
  bool operator==(const Poly& o) const { return terms_ == o.terms_; }

  bool is_zero() const { return terms_.empty(); }
  std::optional<int64_t> as_constant() const;
  bool mentions(const std::string& symbol) const;
  // Every symbol used, once each.
  std::vector<std::string> symbols() const;

  // Coefficient of `symbol` when the polynomial is affine in it (no term has it
  // twice); nullopt otherwise. Zero when the symbol does not occur.
  std::optional<Poly> coefficient(const std::string& symbol) const;
  // The polynomial with `symbol` replaced by `value`.
  Poly substitute(const std::string& symbol, const Poly& value) const;
  // Greatest common divisor of the integer coefficients (0 for the zero polynomial).
  int64_t content() const;
  // Exact division by a constant; nullopt when some coefficient is not divisible.
  std::optional<Poly> divide(int64_t d) const;

  // "4*C*threadIdx.x + blockIdx.x + 1": stable, readable, used as a key too.
  std::string text() const;
  const std::map<Monomial, int64_t>& terms() const { return terms_; }

 private:
  std::map<Monomial, int64_t> terms_;  // no zero coefficients
  void add_term(const Monomial& m, int64_t c);
};

// What a warp's 32 lanes do with one access, from its byte offset polynomial.
struct LaneStride {
  bool affine = false;            // the offset is affine in threadIdx.x
  std::optional<Poly> elements;   // coefficient of threadIdx.x, in elements of the access
  std::optional<int64_t> constant;  // that coefficient when it is a constant
};
LaneStride lane_stride(const Poly& byte_offset, int64_t elem_bytes, const char* symbol = kThreadX);

// Generic strided-tensor indexing, x[i0*s0 + i1*s1 + i2*s2 (+ ...)]: at least three
// distinct runtime parameters each multiplying the thread- and block-derived terms of one
// dimension (one parameter per such term), no index walking memory at unit stride, and
// the lane's stride (`lane`, in elements) one of those parameters. How far apart a warp's
// lanes are is then the caller's layout (1 for a contiguous tensor), not the code's.
// `elements` is the access's offset in elements.
bool runtime_strides(const Poly& elements, const Poly& lane);

// Ways of a shared-memory bank conflict for an access whose neighbouring lanes are
// `word_stride` 4-byte words apart, each lane moving elem_bytes (4, 8 or 16; wider
// accesses are served in 2 or 4 phases of 16 or 8 lanes). 1 = conflict-free.
int64_t bank_conflict_ways(int64_t word_stride, int64_t elem_bytes);
// The same when the stride is symbolic: the conflict its constant factor alone
// guarantees (2*s words: at least 2-way for every s).
int64_t bank_conflict_ways_min(const Poly& word_stride, int64_t elem_bytes);

}  // namespace mlsem::cuda
