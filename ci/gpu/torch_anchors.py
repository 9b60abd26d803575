#!/usr/bin/env python3
"""PyTorch figures on the GPU machine, measured in the same run as dnnblocks' own, so ratios
are not against stale numbers (the machine is shared and figures drift).

Times each family-1 op the way a user would call it (the catalogue's torch call) with CUDA
events after warm-up, median of N, and the device-to-device copy bandwidth (bytes read +
written). Bytes = each input read once + each output written once, as dnnblocks counts.
Writes JSON to the path given (default stdout).
"""
import json
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, warmup=10, reps=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    samples.sort()
    return samples[len(samples) // 2]


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else None
    dev = torch.device("cuda")
    results = {"torch_version": torch.__version__, "device": torch.cuda.get_device_name(0), "ops": []}

    n = 1 << 28  # 1 GiB of f32
    src = torch.randn(n, device=dev)
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    results["copy_bytes_per_s"] = 2 * src.numel() * 4 / (ms * 1e-3)
    del src, dst

    def eager_rmsnorm(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    for rows, cols in [(16384, 8192), (64, 8192), (1, 8192)]:
        for dtype_name, dtype in [("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)]:
            x = torch.randn(rows, cols, device=dev, dtype=dtype)
            b = torch.randn(rows, cols, device=dev, dtype=dtype)
            w = torch.randn(cols, device=dev, dtype=dtype)
            bias = torch.randn(cols, device=dev, dtype=dtype)
            e = x.element_size() * rows * cols
            row_out = x.element_size() * rows
            cases = {
                "relu": (lambda: torch.relu(x), 2 * e),
                "silu": (lambda: F.silu(x), 2 * e),
                "gelu_tanh": (lambda: F.gelu(x, approximate="tanh"), 2 * e),
                "gelu": (lambda: F.gelu(x), 2 * e),
                "exp": (lambda: torch.exp(x), 2 * e),
                "add": (lambda: torch.add(x, b), 3 * e),
                "mul": (lambda: torch.mul(x, b), 3 * e),
                "sum": (lambda: torch.sum(x, -1), e + row_out),
                "max": (lambda: torch.amax(x, -1), e + row_out),
                "softmax": (lambda: torch.softmax(x, -1), 2 * e),
                "layernorm": (lambda: F.layer_norm(x, (cols,), w, bias, 1e-5), 2 * e + 2 * w.numel() * x.element_size()),
                "rmsnorm": (lambda: F.rms_norm(x, (cols,), w, 1e-6), 2 * e + w.numel() * x.element_size()),
                "rmsnorm_eager": (lambda: eager_rmsnorm(x, w), 2 * e + w.numel() * x.element_size()),
            }
            for op, (fn, nbytes) in cases.items():
                ms = median_ms(fn)
                results["ops"].append({"op": op, "dtype": dtype_name, "shape": f"{rows}x{cols}", "median_ms": ms,
                                       "bytes": nbytes, "bytes_per_s": nbytes / (ms * 1e-3)})
            del x, b
    text = json.dumps(results, indent=1)
    if out_path:
        with open(out_path, "w") as f:
            f.write(text + "\n")
    print(f"torch copy: {results['copy_bytes_per_s'] / 1e12:.2f} TB/s")
    for r in results["ops"]:
        if r["shape"] == "16384x8192":
            print(f"torch {r['op']:14s} {r['dtype']:5s} {r['shape']:11s} {r['median_ms'] * 1e3:9.1f} us "
                  f"{r['bytes_per_s'] / 1e12:6.2f} TB/s")


if __name__ == "__main__":
    main()
