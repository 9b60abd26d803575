#!/usr/bin/env python3
"""torch's side of the block benchmarks (docs/blocks.md): the transformers modules the blocks
compute, eager and torch.compile, at the bench problems' sizes, on one CUDA device, in tokens/s.

    python3 suites/blocks/bench_torch.py [--dtype bf16] [--repetitions 20] [--out torch-blocks.json]

Each module is built with random weights at the problem's config (transformers' SDPA
attention, causal; Gemma 2's eager attention with its additive causal or sliding-window mask, as
transformers has no SDPA path with a softcap), warmed up, then timed with CUDA events over
`--repetitions` launches; the median is printed beside the problem string that
`dnnblocks bench --op <block>` times. `--op` picks blocks (comma-separated). `--out FILE` also
writes the medians as a bench results file (docs/bench-json.md, backends torch-eager and
torch-compile) that `dnnblocks report` merges with ours into its Blocks section.
"""

import argparse
import json
import statistics

import torch

PROBLEMS = [
    ("gpt2_block", (4, 1024, 768), {"heads": 12}),
    ("gpt2_block", (4, 2048, 768), {"heads": 12}),
    ("llama_block", (4, 2048, 4096), {"heads": 32, "kv": 8, "ffn": 14336, "theta": 500000.0, "eps": 1e-5}),
    ("gemma2_layer", (4, 2048, 2304), {"heads": 8, "kv": 4, "head_dim": 256, "ffn": 9216, "qscale": 256}),
    ("gemma2_layer", (4, 2048, 2304), {"heads": 8, "kv": 4, "head_dim": 256, "ffn": 9216, "qscale": 256,
                                       "window": 4096}),
    ("zamba2_mlp", (4, 2048, 2560), {"ffn": 10240, "rank": 128}),
    ("zamba2_attn_layer", (4, 2048, 2560), {"heads": 32, "ffn": 10240, "rank": 128}),
]
# Blocks timed in bf16 only (real-model sizes whose f32 runs add nothing to the comparison).
BF16_ONLY = {"llama_block", "gemma2_layer", "zamba2_mlp", "zamba2_attn_layer"}


def causal_mask(s, window, dtype, device):
    """[1, 1, S, S] additive mask as transformers builds it for eager attention: the dtype's
    lowest value where key j > i (or j <= i - window)."""
    i = torch.arange(s, device=device)[:, None]
    j = torch.arange(s, device=device)[None, :]
    keep = j <= i
    if window is not None:
        keep &= j > i - window
    mask = torch.zeros(s, s, dtype=dtype, device=device)
    mask.masked_fill_(~keep, torch.finfo(dtype).min)
    return mask[None, None]


def build_gemma2(shape, p, dtype, device):
    from transformers import Gemma2Config
    from transformers.models.gemma2.modeling_gemma2 import Gemma2DecoderLayer, Gemma2RotaryEmbedding
    _, s, e = shape
    window = p.get("window")
    config = Gemma2Config(hidden_size=e, num_attention_heads=p["heads"], num_key_value_heads=p["kv"],
                          head_dim=p["head_dim"], intermediate_size=p["ffn"], num_hidden_layers=1,
                          query_pre_attn_scalar=p["qscale"], sliding_window=window or 4096,
                          layer_types=["sliding_attention" if window else "full_attention"],
                          max_position_embeddings=max(8192, s))
    config._attn_implementation = "eager"
    module = Gemma2DecoderLayer(config, 0).to(device, dtype).eval()
    rotary = Gemma2RotaryEmbedding(config).to(device)
    mask = causal_mask(s, window, dtype, device)

    def forward(m, x, pos):
        return m(x, position_embeddings=rotary(x, pos), attention_mask=mask, position_ids=pos)
    return module, forward


def build_zamba2(op, shape, p, dtype, device):
    from transformers import Zamba2Config
    from transformers.models.zamba2.modeling_zamba2 import Zamba2AttentionDecoderLayer, Zamba2MLP
    _, _, e = shape
    config = Zamba2Config(hidden_size=e, num_attention_heads=p.get("heads", 32), intermediate_size=p["ffn"],
                          adapter_rank=p["rank"], num_hidden_layers=1, layers_block_type=["hybrid"],
                          num_mem_blocks=1)
    config._attn_implementation = "sdpa"
    if op == "zamba2_mlp":
        module = Zamba2MLP(config, num_fwd_mem_blocks=1, block_id=0).to(device, dtype).eval()
        return module, lambda m, x, pos: m(x, layer_idx=0)
    module = Zamba2AttentionDecoderLayer(config, block_id=0, layer_idx=0).to(device, dtype).eval()
    emb = torch.randn(shape, device=device, dtype=dtype)
    return module, lambda m, x, pos: m(x, emb, layer_idx=0)


def build(op, shape, p, dtype, device="cuda"):
    """(module, forward(m, x, pos)) on `device`."""
    _, s, e = shape
    if op == "gemma2_layer":
        return build_gemma2(shape, p, dtype, device)
    if op.startswith("zamba2_"):
        return build_zamba2(op, shape, p, dtype, device)
    if op == "gpt2_block":
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
        config = GPT2Config(n_embd=e, n_head=p["heads"], n_layer=1, n_positions=s, activation_function="gelu_new",
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        config._attn_implementation = "sdpa"
        module = GPT2Block(config, layer_idx=0).to(device, dtype).eval()
        return module, lambda m, x, pos: m(x)
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    config = LlamaConfig(hidden_size=e, num_attention_heads=p["heads"], num_key_value_heads=p["kv"],
                         intermediate_size=p["ffn"], head_dim=e // p["heads"], rms_norm_eps=p["eps"],
                         rope_parameters={"rope_type": "default", "rope_theta": p["theta"]})
    config._attn_implementation = "sdpa"
    module = LlamaDecoderLayer(config, 0).to(device, dtype).eval()
    rotary = LlamaRotaryEmbedding(config).to(device)

    def forward(m, x, pos):
        return m(x, position_embeddings=rotary(x, pos), position_ids=pos)
    return module, forward


def time_ms(fn, repetitions):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repetitions):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--op", default="", help="blocks to time, comma-separated (default: all)")
    parser.add_argument("--out", default="", help="also write the medians as a bench results file")
    args = parser.parse_args()
    results = []

    def record(op, problem, shape, params, backend, ms):
        b, s, e = shape
        results.append({"case_id": f"{problem}@{backend}:0", "op": op, "dtype": args.dtype, "shape": f"{b}x{s}x{e}",
                        "params": params, "backend": backend, "variant": "", "device": "cuda:0",
                        "device_name": torch.cuda.get_device_name(), "family": "blocks", "status": "ok",
                        "reason": "", "timer": "cuda-events", "median_s": ms / 1e3, "bytes": 0, "flops": 0,
                        "tokens": b * s, "tokens_per_s": b * s / (ms / 1e3)})

    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    only = {o for o in args.op.split(",") if o}
    for op, shape, p in PROBLEMS:
        if (op in BF16_ONLY and args.dtype != "bf16") or (only and op not in only):
            continue
        module, forward = build(op, shape, p, dtype)
        b, s, e = shape
        x = torch.randn(shape, device="cuda", dtype=dtype)
        pos = torch.arange(s, device="cuda").unsqueeze(0).expand(b, s)
        params = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(p.items()))
        problem = f"{op}:{args.dtype}:{b}x{s}x{e}:{params}"
        with torch.no_grad():
            eager = time_ms(lambda: forward(module, x, pos), args.repetitions)
            record(op, problem, shape, params, "torch-eager", eager)
            line = f"{problem}  eager {eager:.3f} ms {b * s / eager * 1e3:,.0f} tokens/s"
            if not args.no_compile:
                compiled = torch.compile(module)
                t = time_ms(lambda: forward(compiled, x, pos), args.repetitions)
                record(op, problem, shape, params, "torch-compile", t)
                line += f"  compile {t:.3f} ms {b * s / t * 1e3:,.0f} tokens/s"
        print(line, flush=True)
        del module
        torch.cuda.empty_cache()
    if args.out:
        doc = {"schema_version": 1, "kind": "bench", "devices": {}, "results": results,
               "fingerprint": {"command": "python3 suites/blocks/bench_torch.py", "torch": torch.__version__}}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
