"""CPU-side tests of the benchmark harness (no GPU, no PyTorch): run with
python3 -m unittest test_bench_logic (CTest does, from kernels/bench)."""
import math
import unittest

import harness


class ToleranceTest(unittest.TestCase):
    def test_rel_l2_is_the_norm_ratio(self):
        # out = ref + e with ||ref||^2 = 25 and ||e||^2 = 0.25: 0.5 / 5
        self.assertAlmostEqual(harness.rel_l2(0.25, 25.0), 0.1)
        self.assertEqual(harness.rel_l2(0.0, 0.0), 0.0)
        self.assertEqual(harness.rel_l2(1.0, 0.0), math.inf)

    def test_bf16_rounding_passes_but_a_wrong_element_fails(self):
        # One bf16 rounding step (relative 2^-9) on every element passes...
        self.assertTrue(harness.is_correct(2 ** -9, "bfloat16", 0))
        # ...the same error fails for float32, and so does one NaN or unwritten element.
        self.assertFalse(harness.is_correct(2 ** -9, "float32", 0))
        self.assertFalse(harness.is_correct(1e-4, "bfloat16", 1))
        self.assertFalse(harness.is_correct(math.nan, "bfloat16", 0))
        # A swapped pair of rows gives a relative error near sqrt(2) * spread: far out.
        self.assertFalse(harness.is_correct(0.5, "bfloat16", 0))


class CountsTest(unittest.TestCase):
    def test_bytes_count_each_input_once_and_each_output_once(self):
        # softmax 16384x8192 bf16: read 256 MiB, write 256 MiB
        self.assertEqual(harness.bytes_moved("softmax", (16384, 8192), "bfloat16"), 2 * 16384 * 8192 * 2)
        # gated MLP reads gate and up, writes y
        self.assertEqual(harness.bytes_moved("gated_mlp", (10, 8), "float16"), 3 * 80 * 2)
        # layernorm also reads weight and bias once
        self.assertEqual(harness.bytes_moved("layernorm", (2, 4), "float32"), 2 * 8 * 4 + 2 * 4 * 4)

    def test_causal_attention_counts_half_the_flops(self):
        full = harness.flops("attention_fwd", (4, 16, 4096, 128), "full")
        self.assertEqual(full, 4 * 4 * 16 * 4096 * 4096 * 128)
        self.assertEqual(harness.flops("attention_fwd", (4, 16, 4096, 128), "causal"), full / 2)

    def test_record_derives_throughput_from_time(self):
        r = harness.run_record("softmax", (1000, 1000), "float32", "fused", 0.008, correct=True, max_abs_err=0.0)
        # 8e6 bytes in 8 microseconds = 1000 GB/s
        self.assertEqual(r["gbps"], 1000.0)
        self.assertEqual(r["shape"], "1000x1000")
        m = harness.run_record("lesson_tiled_matmul", (1000, 1000, 1000), "float32", "fused", 2.0)
        self.assertEqual(m["tflops"], 1.0)  # 2e9 flops in 2 ms


class PhiloxTest(unittest.TestCase):
    def test_known_answers_of_random123(self):
        # counter words, key words, output (Random123 tests/kat_vectors, philox4x32 10)
        kats = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
                ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
                ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
                 (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
        for ctr, key, out in kats:
            self.assertEqual(harness.philox4x32_10(*ctr, *key), out)

    def test_threshold(self):
        self.assertEqual(harness.dropout_threshold(0.1), 1677722)
        self.assertEqual(harness.dropout_threshold(0.0), 0)

    def test_dropout_moves_no_mask(self):
        # training step: x and dy read, y and dx written, 2 bytes each; the forward alone half
        self.assertEqual(harness.bytes_moved("lesson_dropout", (4, 8), "bfloat16", "train"), 4 * 32 * 2)
        self.assertEqual(harness.bytes_moved("lesson_dropout", (4, 8), "bfloat16", "forward"), 2 * 32 * 2)
        self.assertEqual(harness.bytes_moved("lesson_fp8_quant", (4, 8), "bfloat16"), 32 * 3 + 16)
        self.assertEqual(harness.flops("lesson_grouped_gemm", (8, 100, 64, 32)), 2 * 100 * 64 * 32)


class ShapesTest(unittest.TestCase):
    def test_every_kernel_has_a_ragged_shape_and_a_large_one(self):
        for kernel, spec in harness.SHAPES.items():
            shapes = spec["shapes"]
            self.assertTrue(any(any(d % 8 for d in s) for s in shapes), kernel)
            self.assertGreaterEqual(max(math.prod(s) for s in shapes), 1 << 24, kernel)


class SummaryTest(unittest.TestCase):
    def test_speedups_are_other_time_over_fused_time(self):
        runs = [harness.run_record("rmsnorm", (4, 8), "bfloat16", v, ms, correct=True, max_abs_err=0)
                for v, ms in (("fused", 0.1), ("torch_eager", 0.45), ("torch_compile", 0.12))]
        (row,) = harness.summarize(runs, copy_gbps=0.001)
        self.assertAlmostEqual(row["speedup_vs_torch_eager"], 4.5)
        self.assertAlmostEqual(row["speedup_vs_torch_compile"], 1.2)
        self.assertNotIn("speedup_vs_baseline", row)

    def test_fraction_of_a_copy_of_the_same_bytes(self):
        # softmax 4096x4096 bf16 moves 64 MiB: the copy reads 32 MiB and writes 32 MiB
        self.assertEqual(harness.same_bytes_copy("softmax", (4096, 4096), "bfloat16"), 4096 * 4096 * 2)
        self.assertIsNone(harness.same_bytes_copy("attention_fwd", (1, 1, 64, 64), "bfloat16"))
        self.assertIsNone(harness.same_bytes_copy("lesson_dropout", (4, 8), "bfloat16", "train"))
        # 64 bytes in 1 ms = 6.4e-05 GB/s; the copy of the same bytes at 8e-05, the 1 GB copy at 1e-04
        fused = harness.run_record("softmax", (4, 4), "bfloat16", "fused", 0.001, correct=True, max_abs_err=0,
                                   copy_same_bytes_gbps=80.0)
        self.assertEqual(fused["copy_same_bytes_gbps"], 80.0)
        fused["gbps"] = 64.0  # the record rounds to 0.1 GB/s; set a round figure
        (row,) = harness.summarize([fused], copy_gbps=100.0)
        self.assertAlmostEqual(row["fraction_of_copy"], 0.64)
        self.assertAlmostEqual(row["fraction_of_same_bytes_copy"], 0.8)
        self.assertAlmostEqual(row["same_bytes_copy_of_copy"], 0.8)
        # runs without the field (older files) summarize as before
        self.assertNotIn("fraction_of_same_bytes_copy",
                         harness.summarize([dict(fused, copy_same_bytes_gbps=None)], copy_gbps=100.0)[0])

    def test_validate_names_missing_fields(self):
        doc = {"device": "x", "runs": [{"kernel": "softmax", "variant": "fast"}]}
        problems = harness.validate_results(doc)
        self.assertIn("missing key 'copy_gbps'", problems)
        self.assertIn("runs[0]: unknown variant 'fast'", problems)
        self.assertIn("runs[0]: neither 'gbps' nor 'tflops'", problems)

    def test_sanitizer_summaries_of_each_tool(self):
        self.assertEqual(harness.sanitizer_errors("========= ERROR SUMMARY: 0 errors\n"), 0)
        self.assertEqual(harness.sanitizer_errors("========= ERROR SUMMARY: 3 errors\n"), 3)
        race = "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n"
        self.assertEqual(harness.sanitizer_errors(race), 1)
        # no summary: the tool did not finish, which must not read as clean
        self.assertIsNone(harness.sanitizer_errors("Traceback ...\n"))
        log = ("========= Invalid __global__ write of size 2 bytes\n"
               "=========     at void mlsem_kernels::softmax_cached<float, 1, true>(const T1 *, T1 *, long)+0x40\n")
        self.assertEqual(harness.sanitizer_kernels(log + log), ["mlsem_kernels::softmax_cached<float, 1, true>"])

    def test_validate_checks_the_sanitizer_section(self):
        doc = {"device": "x", "driver": "", "cuda": "", "torch": "", "date": "", "command": "", "copy_gbps": 1,
               "runs": [], "sanitizer": {"tools": {"memcheck": {"errors": 0}, "initcheck": {"errors": 0},
                                                   "racecheck": {}}}}
        problems = harness.validate_results(doc)
        self.assertEqual(problems, ["sanitizer: unknown tool 'initcheck'", "sanitizer.racecheck: missing 'errors'"])

    def test_merge_replaces_only_the_remeasured_kernels(self):
        run = lambda k, ms: harness.run_record(k, (1024, 1024), "bfloat16", "fused", ms, correct=True, max_abs_err=0)  # noqa: E731
        old = {"device": "H", "date": "d1", "command": "all", "copy_gbps": 100.0,
               "runs": [run("softmax", 1.0), run("lesson_dropout", 9.0)], "checks": [],
               "errors": ["lesson_dropout 4x8 bfloat16: boom", "softmax 4x8 bfloat16: kept"]}
        new = {"device": "H", "date": "d2", "command": "some", "copy_gbps": 90.0,
               "runs": [run("lesson_dropout", 2.0)], "checks": [], "errors": []}
        out = harness.merge_results(old, new, ["lesson_dropout"])
        self.assertEqual([(r["kernel"], r["ms"]) for r in out["runs"]], [("softmax", 1.0), ("lesson_dropout", 2.0)])
        self.assertEqual(out["errors"], ["softmax 4x8 bfloat16: kept"])
        self.assertEqual((out["date"], out["copy_gbps"]), ("d1", 100.0))
        self.assertEqual(out["merged_runs"][0]["date"], "d2")
        self.assertEqual(len(out["summary"]), 2)
        # each kernel's fraction of copy against its own run's copy bandwidth (2 MiB in, 2 MiB out)
        fractions = {row["kernel"]: row["fraction_of_copy"] for row in out["summary"]}
        self.assertAlmostEqual(fractions["lesson_dropout"], round(round(4 * 2 ** 20 / 2.0 / 1e6, 1) / 90.0, 3))
        self.assertAlmostEqual(fractions["softmax"], round(round(4 * 2 ** 20 / 1.0 / 1e6, 1) / 100.0, 3))
        self.assertEqual(harness.run_of(out, "lesson_dropout")["command"], "some")
        self.assertEqual(harness.run_of(out, "softmax")["command"], "all")
        with self.assertRaises(ValueError):
            harness.merge_results(old, dict(new, device="other"), ["lesson_dropout"])
        # a second merge re-measuring one of two kernels: each kernel's run is its latest
        both = harness.merge_results(old, dict(new, runs=[run("lesson_dropout", 2.0), run("softmax", 3.0)]),
                                     ["lesson_dropout", "softmax"])
        again = harness.merge_results(both, dict(new, date="d3", runs=[run("softmax", 4.0)]), ["softmax"])
        self.assertEqual([m["kernels"] for m in again["merged_runs"]], [["lesson_dropout"], ["softmax"]])
        self.assertEqual(harness.run_of(again, "softmax")["date"], "d3")
        self.assertEqual(harness.run_of(again, "lesson_dropout")["date"], "d2")

    def test_merged_sanitizer_totals(self):
        tool = lambda e, c: {"errors": e, "exit_code": 0, "seconds": 1.0, "checks": c, "checks_correct": c,  # noqa: E731
                             "kernels_with_errors": []}
        old = {"date": "d1", "kernels": ["softmax"], "tools": {t: tool(0, 5) for t in harness.SANITIZER_TOOLS}}
        new = {"date": "d2", "kernels": ["lesson_dropout"], "tools": {t: tool(1, 2) for t in harness.SANITIZER_TOOLS}}
        out = harness.merge_sanitizer(old, new)
        self.assertEqual(out["kernels"], ["softmax", "lesson_dropout"])
        self.assertEqual(out["tools"]["memcheck"]["errors"], 1)
        self.assertEqual(out["tools"]["racecheck"]["checks"], 7)
        self.assertIsNone(harness.merge_sanitizer(old, dict(new, tools={"memcheck": tool(None, 0)}))["tools"]["memcheck"]["errors"])
        with self.assertRaises(ValueError):  # counted already: totals would count it twice
            harness.merge_sanitizer(out, new)

    def test_device_slug(self):
        self.assertEqual(harness.device_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3")



class OverviewTest(unittest.TestCase):
    def test_the_overview_names_every_run_it_quotes(self):
        import report
        doc = {"device": "GPU", "date": "2026-11-23T04:00:00Z", "copy_gbps": 4226.5, "runs": [],
               "merged_runs": [{"date": "2026-11-24T07:00:00Z", "copy_gbps": 4249.1}]}
        head = report.overview(doc).splitlines()[0]
        self.assertIn("runs of 2026-11-23 to 2026-11-24", head)
        self.assertIn("4226-4249 GB/s", head)
        doc["merged_runs"] = []
        head = report.overview(doc).splitlines()[0]
        self.assertIn("GPU, 2026-11-23, copy bandwidth 4226 GB/s", head)

if __name__ == "__main__":
    unittest.main()
