"""scripts/gpu-check.sh's verdict (tools/gpu_check_verdict.py) fails a run that checked nothing
(every GPU test skipped: no device, an outdated driver, a build without NCCL), a run with a
skipped, failed or missing test, and a run missing any figure; and passes a complete one."""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

VERDICT = pathlib.Path(__file__).resolve().parent / "gpu_check_verdict.py"
BINARIES = ["test_matmul_gpu", "test_model_gpu", "test_nccl_collective_gpu"]


def gtest_report(cases):
    """A gtest --gtest_output=json report; cases: (suite, name, result, failed)."""
    suites = {}
    for suite, name, result, failed in cases:
        case = {"name": name, "status": "RUN", "result": result, "classname": suite}
        if failed:
            case["failures"] = [{"failure": "x.cpp:1\nExpected equality", "type": ""}]
        suites.setdefault(suite, []).append(case)
    return {"tests": len(cases), "testsuites": [{"name": s, "testsuite": c} for s, c in suites.items()]}


def passing_reports():
    return {
        "test_matmul_gpu": [("MatmulGpu", "NtWithBias", "COMPLETED", False),
                            ("MatmulGpuThreads", "SameShape", "COMPLETED", False)],
        "test_model_gpu": [("ModelGpu", "PredictLogitsMatchCpuFp32", "COMPLETED", False)],
        "test_nccl_collective_gpu": [("NcclCollectiveGpu", "WorldOfOneRoundTrips", "COMPLETED", False)],
    }


def all_figures():
    rows = [{"impl": "parity", "precision": p, "rows": 256, "max_abs_dlogit": 1e-5, "same_label": 256}
            for p in ("fp32", "bf16")]
    for impl in ("ours", "torch2"):
        rows += [
            {"impl": impl, "mode": "train" if impl == "ours" else "fixed", "batch": 32, "seq": 128, "tok_per_s": 9e5},
            {"impl": impl, "mode": "train" if impl == "ours" else "lengths", "batch": 32, "tok_per_s": 8e5,
             "lengths": "bench/gpu/tweeteval_train_lengths.txt" if impl == "ours" else None},
            {"impl": impl, "mode": "train" if impl == "ours" else "lengths", "batch": 16, "tok_per_s": 7e5,
             "lengths": "bench/gpu/tweeteval_train_lengths.txt" if impl == "ours" else None},
            {"impl": impl, "mode": "infer", "batch": 32, "seq": 64, "tok_per_s": 3e6, "ms_median": 0.7},
            {"impl": impl, "mode": "infer", "batch": 1, "seq": 32, "tok_per_s": 5e4, "ms_median": 0.6},
        ]
    return rows


class GpuCheckVerdict(unittest.TestCase):
    def run_verdict(self, reports, measured, results, expected=BINARIES):
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            (root / "gtest").mkdir()
            for name, cases in reports.items():
                (root / "gtest" / (name + ".json")).write_text(json.dumps(gtest_report(cases)))
            (root / "tests").write_text("".join(n + "\n" for n in expected))
            (root / "measured.txt").write_text("".join(measured))
            (root / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
            r = subprocess.run([sys.executable, str(VERDICT), "--gtest-dir", str(root / "gtest"), "--expect",
                                str(root / "tests"), "--measured", str(root / "measured.txt"), "--results",
                                str(root / "results.jsonl")], capture_output=True, text=True)
            return r.returncode, r.stdout

    def test_a_complete_run_passes(self):
        code, out = self.run_verdict(passing_reports(), ["[measured] nt_bias.f32: max|d| 1e-6\n"], all_figures())
        self.assertEqual(code, 0, out)
        self.assertIn("gpu-check: PASS", out)

    def test_a_run_without_a_device_fails_although_nothing_failed(self):
        # What a machine with no GPU, or a driver older than the build's CUDA, produces: every
        # test skipped, no measured error, the CLI and the benchmarks printing nothing.
        skipped = {name: [(name, "Case", "SKIPPED", False)] for name in BINARIES}
        code, out = self.run_verdict(skipped, [], [])
        self.assertEqual(code, 1, out)
        self.assertIn("gpu-check: FAIL", out)
        for name in BINARIES:
            self.assertIn(f"{name}: SKIPPED", out)
        self.assertIn("no [measured] line", out)
        self.assertIn("missing figure: CLI parity", out)

    def test_nccl_tests_skipped_in_a_build_without_nccl_fail_the_run(self):
        reports = passing_reports()
        reports["test_nccl_collective_gpu"] = [("NcclCollectiveGpu", "WorldOfOneRoundTrips", "SKIPPED", False)]
        code, out = self.run_verdict(reports, ["[measured] x\n"], all_figures())
        self.assertEqual(code, 1, out)
        self.assertIn("SKIPPED NcclCollectiveGpu.WorldOfOneRoundTrips", out)

    def test_a_failed_or_missing_test_binary_fails_the_run(self):
        reports = passing_reports()
        reports["test_model_gpu"] = [("ModelGpu", "PredictLogitsMatchCpuFp32", "COMPLETED", True)]
        del reports["test_matmul_gpu"]  # crashed: no JSON report
        code, out = self.run_verdict(reports, ["[measured] x\n"], all_figures())
        self.assertEqual(code, 1, out)
        self.assertIn("FAILED ModelGpu.PredictLogitsMatchCpuFp32", out)
        self.assertIn("test_matmul_gpu: no test report", out)

    def test_each_missing_figure_fails_the_run_and_is_named(self):
        rows = [r for r in all_figures()
                if not (r["impl"] == "torch2" and r["mode"] == "infer" and r["batch"] == 1)]
        code, out = self.run_verdict(passing_reports(), ["[measured] x\n"], rows)
        self.assertEqual(code, 1, out)
        self.assertIn("missing figure: torch2 infer batch 1 seq 32", out)
        self.assertEqual(out.count("missing figure"), 1, out)


if __name__ == "__main__":
    unittest.main()
