// The kernels catalog: READMEs as lessons, benchmark results as measured speedups.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/catalog.h"

namespace mlsem::kernels {
namespace {

namespace fs = std::filesystem;

class TempKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mlsem_kernels_catalog_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "results");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  // A results document with fused and eager times for the given shapes.
  static std::string results(const std::string& device, const std::string& runs) {
    return R"({"device": ")" + device +
           R"(", "driver": "580", "cuda": "13.0", "torch": "2.11", "date": "2026-11-21", "command": "bench.py",
               "copy_gbps": 4000, "runs": [)" + runs + "]}";
  }
  static std::string run(const std::string& kernel, const std::string& shape, const std::string& variant, double ms,
                         bool correct = true) {
    return R"({"kernel": ")" + kernel + R"(", "shape": ")" + shape + R"(", "dtype": "bfloat16", "variant": ")" +
           variant + R"(", "ms": )" + std::to_string(ms) + R"(, "gbps": 1.0, "correct": )" +
           (correct ? "true" : "false") + R"(, "max_abs_err": 0.001})";
  }
  fs::path dir_;
};

TEST_F(TempKernels, ListsKernelsWithTheirReadmeTitles) {
  write("softmax/README.md", "# Softmax, one pass\n\nbody\n");
  write("layernorm/README.md", "intro line\n# LayerNorm\n");
  write("common/device.cuh", "// no README: not a kernel\n");
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(c.kernels().size(), 2u);
  EXPECT_EQ(c.kernels()[0].name, "layernorm");  // sorted
  EXPECT_EQ(c.kernels()[0].title, "LayerNorm");
  EXPECT_EQ(c.kernels()[1].title, "Softmax, one pass");
  ASSERT_NE(c.find("kernels/softmax"), nullptr);
  EXPECT_EQ(c.find("softmax"), c.find("kernels/softmax"));
  EXPECT_EQ(c.find("rope"), nullptr);
  EXPECT_EQ(c.readme("softmax"), "# Softmax, one pass\n\nbody\n");
  EXPECT_EQ(c.readme("rope"), "");
}

TEST_F(TempKernels, QuotesTheLargestShapeWhenTheUsersShapeIsUnknown) {
  write("softmax/README.md", "# Softmax\n");
  write("results/h100.json",
        results("NVIDIA H100 80GB HBM3", run("softmax", "1024x1024", "fused", 0.01) + "," +
                                             run("softmax", "1024x1024", "torch_eager", 0.02) + "," +
                                             run("softmax", "16384x8192", "fused", 0.2) + "," +
                                             run("softmax", "16384x8192", "torch_eager", 0.62) + "," +
                                             run("softmax", "16384x8192", "torch_compile", 0.25)));
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  EXPECT_TRUE(errors.empty());
  // 0.62 / 0.2 = 3.1
  EXPECT_EQ(c.speedup_summary("softmax"),
            "fused: 3.1x faster than the eager form on NVIDIA H100 80GB HBM3 at 16384x8192 bf16");
  // A user's 2048x512 tensor is nearest (in log scale) to the 1024x1024 measurement: 0.02 / 0.01.
  const int64_t small[] = {2048, 512};
  EXPECT_EQ(c.speedup_summary("kernels/softmax", small),
            "fused: 2.0x faster than the eager form on NVIDIA H100 80GB HBM3 at 1024x1024 bf16");
  EXPECT_EQ(c.speedup_summary("layernorm"), "no measurement yet");
}

// A finding in a CUDA kernel is compared with the reference's naive CUDA form (the code
// the user wrote), a finding in Python with eager PyTorch; without a timed naive form the
// eager comparison stands.
TEST_F(TempKernels, CudaFindingsQuoteTheNaiveCudaForm) {
  write("results/h100.json",
        results("GPU A", run("lesson_vectorized", "1024", "fused", 0.2) + "," +
                             run("lesson_vectorized", "1024", "baseline", 0.3) + "," +
                             run("lesson_vectorized", "1024", "torch_eager", 0.19) + "," +
                             run("bias_gelu", "8x8", "fused", 0.1) + "," + run("bias_gelu", "8x8", "torch_eager", 0.5)));
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(c.speedup_summary("lesson_vectorized"), "fused: 1.1x slower than the eager form on GPU A at 1024 bf16");
  EXPECT_EQ(c.speedup_summary("lesson_vectorized", {}, Against::naive_cuda),
            "fused: 1.5x faster than the naive CUDA form on GPU A at 1024 bf16");
  EXPECT_EQ(c.speedup_summary("bias_gelu", {}, Against::naive_cuda),
            "fused: 5.0x faster than the eager form on GPU A at 8x8 bf16");
}

TEST_F(TempKernels, SaysSlowerAndSkipsIncorrectOrUnpairedRuns) {
  write("results/a.json", results("GPU A", run("rope", "100x10", "fused", 0.4) + "," +
                                              run("rope", "100x10", "torch_eager", 0.1) + "," +
                                              run("rope", "9999x99", "fused", 0.1, /*correct=*/false) + "," +
                                              run("rope", "9999x99", "torch_eager", 5.0) + "," +
                                              run("rope", "5000x50", "fused", 0.1)));
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  EXPECT_TRUE(errors.empty());
  // The wrong 9999x99 result and the eager-less 5000x50 one are not quoted.
  EXPECT_EQ(c.speedup_summary("rope"), "fused: 4.0x slower than the eager form on GPU A at 100x10 bf16");
}

TEST_F(TempKernels, MalformedResultsNameTheFileAndTheRestStillLoads) {
  write("results/broken.json", "{\"device\": \"x\", \"runs\": [");
  write("results/norums.json", "{\"device\": \"x\"}");
  write("results/good.json", results("GPU B", run("softmax", "8x8", "fused", 1.0) + "," +
                                                run("softmax", "8x8", "torch_eager", 3.0)));
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].path.find("broken.json"), std::string::npos);
  EXPECT_NE(errors[0].message.find("malformed results JSON"), std::string::npos);
  EXPECT_NE(errors[1].path.find("norums.json"), std::string::npos);
  EXPECT_NE(errors[1].message.find("'runs'"), std::string::npos);
  EXPECT_EQ(c.speedup_summary("softmax"), "fused: 3.0x faster than the eager form on GPU B at 8x8 bf16");
}

TEST_F(TempKernels, BenchCommandRunsTheHarnessForOneKernel) {
  write("softmax/README.md", "# Softmax\n");
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  const std::vector<std::string> cmd = c.bench_command("kernels/softmax", "/tmp/out.json");
  const std::vector<std::string> want{"python3", (dir_ / "bench" / "bench.py").string(), "--kernel", "softmax",
                                      "--out", "/tmp/out.json"};
  EXPECT_EQ(cmd, want);
  EXPECT_TRUE(c.bench_command("nonexistent", "/tmp/out.json").empty());
}

TEST(KernelsCatalog, MissingDirectoryIsAnError) {
  std::vector<FileError> errors;
  const Catalog c = Catalog::load("/nonexistent/mlsem/kernels", errors);
  EXPECT_TRUE(c.kernels().empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(c.speedup_summary("softmax"), "no measurement yet");
}

TEST_F(TempKernels, LadderTableHasARowPerShapeAndAColumnPerMeasuredRung) {
  write("softmax/README.md", "# Softmax\n");
  write("results/h100.json", results("H100", run("softmax", "1024x1024", "torch_eager", 0.4) + "," +
                                                 run("softmax", "1024x1024", "fused", 0.1) + "," +
                                                 run("softmax", "1024x1024", "torch_compile", 0.2) + "," +
                                                 run("softmax", "4096x4096", "torch_eager", 3.0) + "," +
                                                 run("softmax", "4096x4096", "fused", 1.0, false) + "," +
                                                 run("layernorm", "1024x1024", "triton", 9.0)));
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(dir_, errors);
  const std::string t = c.ladder_table("kernels/softmax");
  EXPECT_EQ(t.rfind("H100\n", 0), 0u) << t;
  EXPECT_NE(t.find("eager PyTorch"), std::string::npos) << t;
  EXPECT_NE(t.find("torch.compile"), std::string::npos) << t;
  EXPECT_EQ(t.find("Triton"), std::string::npos) << t;  // measured for another kernel only
  EXPECT_EQ(t.find("library call"), std::string::npos) << t;
  EXPECT_NE(t.find("0.1 ms 4.00x"), std::string::npos) << t;    // fused against eager
  EXPECT_NE(t.find("0.2 ms 2.00x"), std::string::npos) << t;    // compile against eager
  EXPECT_NE(t.find("1 ms wrong"), std::string::npos) << t;      // outside tolerance: no speedup
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4);           // device, header, two shapes
  EXPECT_TRUE(c.ladder_table("rope").empty());
}

// The repository's own kernels and results: every kernel the rules link to has a lesson,
// and the committed GPU results give each memory-bound kernel a measured speedup.
TEST(KernelsCatalog, RepositoryKernelsHaveLessonsAndMeasurements) {
  std::vector<FileError> errors;
  const Catalog c = Catalog::load(fs::path(MLSEM_SOURCE_DIR) / "kernels", errors);
  EXPECT_TRUE(errors.empty()) << errors.front().path << ": " << errors.front().message;
  for (const char* name : {"bias_gelu", "softmax", "layernorm", "rmsnorm", "gated_mlp", "rope", "cross_entropy",
                           "attention_fwd", "lesson_coalescing", "lesson_vectorized", "lesson_warp_reduce",
                           "lesson_tiled_matmul", "lesson_smem_transpose", "lesson_dropout", "lesson_grouped_gemm",
                           "lesson_fp8_quant"}) {
    const KernelEntry* k = c.find(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_FALSE(k->title.empty()) << name;
    EXPECT_EQ(c.speedup_summary(name).rfind("fused: ", 0), 0u) << name << ": " << c.speedup_summary(name);
  }
}

}  // namespace
}  // namespace mlsem::kernels
