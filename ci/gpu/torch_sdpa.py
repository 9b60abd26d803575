#!/usr/bin/env python3
"""PyTorch's F.scaled_dot_product_attention on the GPU machine at sdpa's bench problems, timed
as dnnblocks times its own (CUDA events after warm-up, median), so ratios come from one run.
FLOPs as FlashAttention's benchmarks and suites/ops/sdpa_desc.h count them: forward 4 S^2 D per
head (half with causal), backward 2.5x the forward. Prints one line per case and writes JSON to
the path given (default stdout)."""
import json
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_anchors import median_ms  # noqa: E402  (one way of timing torch in ci/gpu)


def main():
    rows = []
    b, h, s, d = 4, 32, 4096, 128
    for causal, kv in ((False, 32), (True, 32), (True, 8)):
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv != h)
        o = fwd()
        do = torch.randn_like(o)
        bwd = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        name = f"sdpa:bf16:{b}x{h}x{s}x{d}" + (":" + ",".join(
            p for p in (("causal=1" if causal else ""), (f"kv={kv}" if kv != h else "")) if p) if causal or kv != h else "")
        for op, fn, f in (("sdpa", fwd, flops), ("sdpa_bwd", bwd, 2.5 * flops)):
            ms = median_ms(fn, warmup=5, reps=20)
            rows.append({"case": name.replace("sdpa:", op + ":", 1), "median_us": ms * 1e3, "tflops": f / ms / 1e9})
            print(f"torch {rows[-1]['case']:<48} {ms * 1e3:10.1f} us {rows[-1]['tflops']:7.1f} TFLOP/s")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cases": rows}
    text = json.dumps(out, indent=1)
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
