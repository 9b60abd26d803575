#!/usr/bin/env python3
"""torch's side of the training-step benchmarks (docs/blocks.md, "The training step"): the
transformers modules of gpt2_block_bwd and llama_block_bwd run forward and backward,
torch.autograd.grad(module(x), (x, *parameters), dy), eager and torch.compile, at the bench
problems' sizes, on one CUDA device, in tokens/s.

    python3 suites/blocks/bench_torch_train.py [--dtype bf16] [--repetitions 10] [--no-compile]

The modules are bench_torch.py's (random weights, transformers' SDPA attention, causal); each
launch is the forward and the gradients of x and every parameter for a random dy, what
`dnnblocks bench --op gpt2_block_bwd,llama_block_bwd` times (whose graph also runs the forward
up to the last node the backward reads). Timed with CUDA events; the median is printed beside
the problem string.
"""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_torch import build, time_ms  # noqa: E402

PROBLEMS = [
    ("gpt2_block_bwd", (4, 1024, 768), {"heads": 12}),
    ("gpt2_block_bwd", (4, 2048, 768), {"heads": 12}),
    ("llama_block_bwd", (1, 2048, 4096), {"heads": 32, "kv": 8, "ffn": 14336, "theta": 500000.0, "eps": 1e-5}),
    ("llama_block_bwd", (4, 2048, 4096), {"heads": 32, "kv": 8, "ffn": 14336, "theta": 500000.0, "eps": 1e-5}),
]
BF16_ONLY = {"llama_block_bwd"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for op, shape, p in PROBLEMS:
        if op in BF16_ONLY and args.dtype != "bf16":
            continue
        module, forward = build(op.removesuffix("_bwd"), shape, p, dtype)
        b, s, e = shape
        x = torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
        dy = torch.randn(shape, device="cuda", dtype=dtype)
        pos = torch.arange(s, device="cuda").unsqueeze(0).expand(b, s)
        params = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(p.items()))
        problem = f"{op}:{args.dtype}:{b}x{s}x{e}:{params}"

        def step(m):
            return torch.autograd.grad(forward(m, x, pos), [x, *m.parameters()], dy)

        eager = time_ms(lambda: step(module), args.repetitions)
        line = f"{problem}  eager {eager:.3f} ms {b * s / eager * 1e3:,.0f} tokens/s"
        if not args.no_compile:
            compiled = torch.compile(module)
            t = time_ms(lambda: step(compiled), args.repetitions)
            line += f"  compile {t:.3f} ms {b * s / t * 1e3:,.0f} tokens/s"
        print(line, flush=True)
        del module
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
