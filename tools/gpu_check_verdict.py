#!/usr/bin/env python3
"""The verdict of scripts/gpu-check.sh: whether a run on the GPU checked anything.

A run passes only when every expected GPU test binary left its gtest JSON report, no test in
them failed or was SKIPPED (a GPU test skips without a device, a driver too old for the
build's CUDA, or a build without NCCL: such a run proves nothing, so it fails), the tests
printed their measured errors, and results.jsonl holds every figure the table is made of
(CLI parity in fp32 and bf16, ours and PyTorch 2 on each shape).

Usage: gpu_check_verdict.py --gtest-dir DIR --expect TESTS_FILE --measured measured.txt
                            --results results.jsonl
Prints one line per problem and a last line "gpu-check: PASS" or "gpu-check: FAIL (...)";
exit code 0 on PASS, 1 on FAIL, 2 on usage errors.
"""
import argparse
import json
import math
import os
import sys

# The shapes scripts/gpu-check.sh measures, keyed as its table keys them.
REQUIRED_SHAPES = [("train", 32, 128), ("train", 32, "tweeteval"), ("train", 16, "tweeteval"), ("infer", 32, 64),
                   ("infer", 1, 32)]
REQUIRED_PARITY = ["fp32", "bf16"]


def shape_key(row):
    if row.get("mode") == "infer":
        return ("infer", row.get("batch"), row.get("seq"))
    lengths = row.get("lengths") or row.get("mode") == "lengths"
    return ("train", row.get("batch"), "tweeteval" if lengths else row.get("seq"))


def check_tests(gtest_dir, expected):
    """Problems with the GPU test binaries' JSON reports, and (tests run, tests passed)."""
    problems, ran, passed = [], 0, 0
    for name in expected:
        path = os.path.join(gtest_dir, name + ".json")
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{name}: no test report ({e.__class__.__name__}): it crashed, timed out or did not run")
            continue
        cases = [c for suite in report.get("testsuites", []) for c in suite.get("testsuite", [])]
        if not cases:
            problems.append(f"{name}: ran no test")
        for c in cases:
            full = f"{c.get('classname', '?')}.{c.get('name', '?')}"
            ran += 1
            if c.get("result") == "SKIPPED":
                problems.append(f"{name}: SKIPPED {full} (its reason is in tests.log)")
            elif c.get("failures"):
                problems.append(f"{name}: FAILED {full}")
            elif c.get("status") != "RUN":
                problems.append(f"{name}: did not run {full} ({c.get('status')})")
            else:
                passed += 1
    return problems, ran, passed


def check_measured(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if line.startswith("[measured]")]
    except OSError:
        lines = []
    return ([] if lines else [f"{path}: no [measured] line: the GPU tests printed no error figures"]), len(lines)


def finite_positive(v):
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def check_results(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass  # a stray line: the figures it should have held are reported missing below
    except OSError:
        pass
    problems = []
    for prec in REQUIRED_PARITY:
        if not any(r.get("impl") == "parity" and r.get("precision") == prec and r.get("rows", 0) > 0
                   and isinstance(r.get("max_abs_dlogit"), (int, float)) for r in rows):
            problems.append(f"missing figure: CLI parity predict --device cuda vs cpu, {prec}")
    for impl in ("ours", "torch2"):
        for shape in REQUIRED_SHAPES:
            if not any(r.get("impl") == impl and shape_key(r) == shape and finite_positive(r.get("tok_per_s"))
                       for r in rows):
                problems.append(f"missing figure: {impl} {shape[0]} batch {shape[1]} seq {shape[2]} (tok_per_s)")
    return problems


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gtest-dir", required=True)
    p.add_argument("--expect", required=True, help="file naming the GPU test binaries, one a line")
    p.add_argument("--measured", required=True)
    p.add_argument("--results", required=True)
    a = p.parse_args(argv)
    try:
        with open(a.expect, encoding="utf-8") as f:
            expected = [line.strip() for line in f if line.strip()]
    except OSError as e:
        print(f"gpu_check_verdict: cannot read {a.expect}: {e.strerror}", file=sys.stderr)
        return 2
    problems = [] if expected else [f"{a.expect}: names no GPU test binary"]
    test_problems, ran, passed = check_tests(a.gtest_dir, expected)
    measured_problems, measured = check_measured(a.measured)
    problems += test_problems + measured_problems + check_results(a.results)
    for line in problems:
        print("gpu-check: " + line)
    summary = f"{len(expected)} test binaries, {passed} of {ran} tests passed, {measured} measured errors"
    if problems:
        print(f"gpu-check: FAIL ({len(problems)} problems; {summary})")
        return 1
    print(f"gpu-check: PASS ({summary}, every figure present)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
