// Deterministic random vectors for the CPU-side kernel tests.
#pragma once

#include <random>
#include <vector>

namespace mlsem_kernels::testing {

inline std::vector<double> random_vector(size_t n, unsigned seed, double scale = 1.0, double shift = 0.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(shift, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

}  // namespace mlsem_kernels::testing
