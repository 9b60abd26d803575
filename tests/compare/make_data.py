#!/usr/bin/env python3
"""Writes the hand-made results files of tests/compare/data/ (docs/bench-json.md, schema 1).

Deterministic (fixed seeds), so rerunning it rewrites the same files. Each "run" draws the
repetition times of every case around the case's true time with the given cv; a slowdown
multiplies one case's true time. Run from anywhere: python3 tests/compare/make_data.py
"""
import json
import math
import os
import random

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MODEL = "Test CPU (16 cores)"
# case id -> (median seconds, bytes, flops)
CASES = {
    "add:f32:64x8192@avx512:0": (2.1e-4, 6.29e6, 5.24e5),
    "relu:f32:64x8192@avx512:0": (1.4e-4, 4.19e6, 5.24e5),
    "gelu:f32:64x8192@avx512:0": (3.9e-4, 4.19e6, 1.05e7),
    "softmax:f32:64x8192@avx512:0": (4.4e-4, 4.19e6, 2.62e6),
    "softmax:f32:64x8192:softcap=30@avx512:0": (5.2e-4, 4.19e6, 3.67e6),
    "rmsnorm:f32:64x4096:eps=1e-6@avx512:0": (1.9e-4, 2.11e6, 1.05e6),
    "layernorm:f32:64x4096:eps=1e-5@avx512:0": (2.3e-4, 2.11e6, 1.31e6),
    "cross_entropy:f32:64x32000@avx512:0": (1.6e-3, 8.19e6, 6.14e6),
}
SKIPPED = "softmax:bf16:64x8192@avx512:0"


def result(case_id, times, device_name=MODEL, status="ok", reason=""):
    problem, where = case_id.split("@")
    parts = problem.split(":")
    backend = where.split(":")[0]
    r = {
        "case_id": case_id, "benchmark_name": case_id + "/manual_time",
        "op": parts[0], "dtype": parts[1], "shape": parts[2], "params": parts[3] if len(parts) > 3 else "",
        "backend": backend.split("/")[0], "variant": backend.split("/")[1] if "/" in backend else "",
        "device": "cpu:0", "device_name": device_name, "status": status, "reason": reason,
    }
    if status != "ok":
        return r
    median_true, nbytes, flops = CASES[case_id]
    s = sorted(times)
    median = (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2 if len(s) % 2 == 0 else s[len(s) // 2]
    mean = sum(times) / len(times)
    cv = math.sqrt(sum((t - mean) ** 2 for t in times) / (len(times) - 1)) / mean
    r.update({
        "timer": "host-clock", "cache_policy": "cold", "rotation_sets": 8, "working_set_bytes": nbytes,
        "cache_bytes": 1.05e8, "repetitions": len(times), "iterations": 200, "samples": 200 * len(times),
        "repetition_times_s": times, "median_s": median, "min_s": s[0], "cv": cv,
        "noise_target": 0.01, "noise_target_met": cv <= 0.01, "bytes": nbytes, "flops": flops,
        "bytes_per_s": nbytes / median, "flops_per_s": flops / median, "intensity": flops / nbytes,
        "compute_unit": "f32_fma",
        "roofline": {"bandwidth_bytes_per_s": 1.2e11, "compute_flops_per_s": 2.0e12, "compute_source": "measured",
                     "bound_flops_per_s": min(2.0e12, flops / nbytes * 1.2e11), "bound_by": "memory",
                     "sol_percent": 100 * nbytes / median / 1.2e11, "pct_of_copy": 100 * nbytes / median / 1.1e11},
        "launch": None, "clock": None, "flags": [],
    })
    return r


def bench_file(seed, cv=0.01, slow=None, factor=1.0, drop=None, add=None, device_name=MODEL, reps=10, command=""):
    rng = random.Random(seed)
    results = []
    for case_id, (median, _, _) in CASES.items():
        if case_id == drop:
            continue
        true = median * (factor if case_id == slow else 1.0)
        times = [true * math.exp(rng.gauss(0, cv)) for _ in range(reps)]
        results.append(result(case_id, times, device_name))
    results.append(result(SKIPPED, [], device_name, "skipped", "AVX512_BF16 not present on this CPU"))
    if add:
        CASES[add] = (3.0e-4, 4.19e6, 5.24e5)
        results.append(result(add, [3.0e-4 * math.exp(rng.gauss(0, cv)) for _ in range(reps)], device_name))
        del CASES[add]
    return {
        "schema_version": 1, "kind": "bench",
        "context": {"date": "2026-11-21T10:00:00+00:00", "host_name": "test-host", "num_cpus": 16,
                    "library_build_type": "release"},
        "benchmarks": [],
        "fingerprint": {"git_commit": "0000000", "git_dirty": False, "compiler": "GNU 12.2.0", "cxx_flags": "-O3",
                        "build_type": "Release", "cuda_compiler": None, "cuda_flags": None, "cuda_architectures": None,
                        "cuda_driver": None, "cuda_runtime": None, "opencl_platforms": [], "onednn": None,
                        "google_benchmark": "1.7.1", "host": "test-host", "date": "2026-11-21T10:00:00Z",
                        "command": command or "dnnblocks bench --backend avx512 --size 64x8192"},
        "devices": {"cpu:0": {"info": {"id": "cpu:0", "kind": "cpu", "name": device_name}, "ceilings": None}},
        "results": results,
    }


def check_file(verdicts):
    cases = [{"case": c, "device": "cpu:0",
              "source": "fixture family1/softmax/basic.f32.safetensors" if "fixture=" in c else "random seed=0x5eed", "known_deviation": "", "verdict": v,
              "reason": "" if v == "PASS" else "max abs error 3.1e-2 at [3, 17] (got 0.52, expected 0.49)",
              "seconds": 0.01, "outputs": []} for c, v in verdicts.items()]
    summary = {k: sum(1 for v in verdicts.values() if v == w) for k, w in
               [("passed", "PASS"), ("failed", "FAIL"), ("expected_failures", "XFAIL"), ("skipped", "SKIP"),
                ("unsupported", "UNSUPPORTED"), ("bad_input", "BAD_INPUT")]}
    return {"schema_version": 1, "kind": "check", "summary": summary, "cases": cases}


def write(name, doc):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


os.makedirs(HERE, exist_ok=True)
base = bench_file(1)
write("bench-base.json", base)
write("bench-same-build.json", bench_file(2))
write("bench-softmax-20pct-slower.json", bench_file(3, slow="softmax:f32:64x8192@avx512:0", factor=1.20))
write("bench-noisy-a.json", bench_file(4, cv=0.08))
write("bench-noisy-b.json", bench_file(5, cv=0.08))
write("bench-missing-and-new.json", bench_file(6, drop="gelu:f32:64x8192@avx512:0", add="silu:f32:64x8192@avx512:0"))
write("bench-other-model.json", bench_file(7, device_name="Other CPU (8 cores)"))
# The same cases measured on device index 1 of the same model: matches by case id without the index.
on_cpu1 = bench_file(8)
for r in on_cpu1["results"]:
    r["case_id"] = r["case_id"].replace("@avx512:0", "@avx512:1")
write("bench-device-index-1.json", on_cpu1)
check_ids = ["softmax:f32:4x64:fixture=basic@avx512:0", "softmax:f32:64x8192@avx512:0", "rmsnorm:f32:64x4096:eps=1e-6@avx512:0",
             "gelu:f32:1x4096@avx512:0", "add:f32:64x8192@avx512:0", "relu:f32:64x8192@avx512:0"]
check_base = check_file(dict(zip(check_ids, ["PASS", "PASS", "PASS", "FAIL", "PASS", "PASS"])))
write("check-base.json", check_base)
candidate = dict(zip(check_ids[:5], ["PASS", "FAIL", "PASS", "PASS", "PASS"]))  # one regression, one fixed, relu missing
candidate["silu:f32:64x8192@avx512:0"] = "PASS"                                 # new
write("check-softmax-fails.json", check_file(candidate))
write("baseline.json", {"schema_version": 1, "kind": "baseline", "device_model": MODEL, "bench": base, "check": check_base})
with open(os.path.join(HERE, "truncated.json"), "w") as f:
    f.write(json.dumps(base)[:300])
bad_times = bench_file(1)
bad_times["results"][2]["repetition_times_s"][4] = -1.0e-4
write("bench-negative-time.json", bad_times)
