"""The committed family-1 fixtures: coverage, the file format the C++ loader relies on, and
every golden recomputed from the contract's math (docs/ops-family1.md) written out here in
float64, independently of the torch calls the generator used.
Run: python3 -m pytest tests/python (needs torch and safetensors)."""
import hashlib
import json
import math
import re

import torch
from safetensors import safe_open

import conftest
from gen import family1
from gen.stfile import canonical_bytes
from safetensors.torch import save

FAMILY1 = conftest.FIXTURES / "family1"
MANIFEST = conftest.FIXTURES / "manifest.json"

OPS = list(family1.OPS)  # the generator's ops; SIGNATURE below is the contract's, by hand
SIGNATURE = {  # inputs (in order), outputs
    **{op: (["x"], ["y"]) for op in ["relu", "sigmoid", "tanh", "exp", "silu", "gelu", "gelu_tanh",
                                      "sum", "mean", "max", "norm2"]},
    **{op: (["a", "b"], ["y"]) for op in ["add", "sub", "mul", "div"]},
    "lerp": (["a", "b", "w"], ["y"]),
    "softmax": (["x", "mask"], ["y"]),
    "layernorm": (["x", "w", "b"], ["y"]),
    "rmsnorm": (["x", "w"], ["y"]),
    "cross_entropy": (["logits", "target"], ["loss"]),
    "cross_entropy_bwd": (["logits", "target"], ["dlogits"]),
}
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _files():
    return sorted(FAMILY1.glob("*/*.safetensors"))


def _load(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata())


def _parse_problem(text):
    op, dtype, shape, *rest = text.split(":")
    assert len(rest) <= 1, text
    params = dict(kv.split("=", 1) for kv in rest[0].split(",")) if rest else {}
    if rest:
        keys = [kv.split("=", 1)[0] for kv in rest[0].split(",")]
        assert keys == sorted(keys), f"{text}: params not in byte order"
    return op, dtype, tuple(int(d) for d in shape.split("x")), params


def test_every_op_and_dtype_is_covered():
    seen = {}
    for path in _files():
        seen.setdefault(path.parent.name, set()).add(path.name.split(".")[1])
    for op in OPS:
        want = {"f32", "bf16"} if op.startswith("cross_entropy") else {"f32", "f16", "bf16"}
        assert seen.get(op) == want, f"{op}: dtypes {seen.get(op)}"
    assert set(seen) == set(OPS)


def test_edge_cases_are_present():
    cases = {}
    for path in _files():
        cases.setdefault(path.parent.name, set()).add(path.name.split(".")[0])
    for op in OPS:
        assert {"basic", "odd", "prime", "row"} <= cases[op], op
        if not op.startswith("cross_entropy"):
            assert {"large", "denormal", "transposed", "padded"} <= cases[op], op
    for op in ["add", "sub", "mul", "div", "lerp"]:
        assert {"bcast_row", "bcast_col", "bcast_3d"} <= cases[op], op
    for op in ["sum", "mean", "max", "norm2", "softmax", "layernorm", "rmsnorm", "cross_entropy"]:
        assert "long" in cases[op], op
    for op in ["softmax", "layernorm", "rmsnorm"]:
        assert {"constant", "near_constant", "single_column"} <= cases[op], op
    assert {"scale", "softcap", "masked", "mask_row"} <= cases["softmax"]
    assert {"gemma", "gemma_odd"} <= cases["rmsnorm"]
    assert {"ignore", "ignore_class", "large"} <= cases["cross_entropy"]


def test_format_and_metadata():
    for path in _files():
        tensors, md = _load(path)
        op, dtype, shape, params = _parse_problem(md["problem"])
        case = path.name.split(".")[0]
        assert (op, dtype, md["op"], md["dtype"], md["case"]) == (path.parent.name, path.name.split(".")[1], op, dtype, case)
        assert params["fixture"] == case and json.loads(md["params"]) == params
        assert md["generator"] == "suites/fixtures/gen/family1.py" and md["torch_version"] and int(md["seed"]) >= 0
        inputs, outputs = SIGNATURE[op]
        present = [n for n in inputs if n in tensors]
        assert present[:1] == inputs[:1] and tuple(tensors[present[0]].shape) == shape, path
        optional = {"softmax": "mask", "lerp": "w"}.get(op)  # present exactly when its param is
        for name in inputs:
            assert (name in tensors) == (name != optional or name in params), f"{path}: input {name}"
        for name in present:
            want = torch.int64 if name == "target" else TORCH_DTYPE[dtype]
            assert tensors[name].dtype == want, f"{path}: {name} is {tensors[name].dtype}"
        assert set(tensors) == set(present) | {f"torch.{o}" for o in outputs} | {f"golden.{o}" for o in outputs}, path
        for o in outputs:
            assert tensors[f"torch.{o}"].dtype == TORCH_DTYPE[dtype]
            assert tensors[f"golden.{o}"].dtype == torch.float64
            assert tensors[f"torch.{o}"].shape == tensors[f"golden.{o}"].shape
            assert not torch.isnan(tensors[f"golden.{o}"]).any(), f"{path}: NaN in golden"


# ------------------------------------------------------------ the contract's math in float64

def _sigmoid(x):
    return 1.0 / (1.0 + torch.exp(-x))


def _unary(op, x):
    return {
        "relu": lambda: torch.where(x > 0, x, torch.zeros_like(x)),
        "sigmoid": lambda: _sigmoid(x),
        "tanh": lambda: torch.tanh(x),
        "exp": lambda: torch.exp(x),
        "silu": lambda: x * _sigmoid(x),
        "gelu": lambda: 0.5 * x * (1 + torch.erf(x / math.sqrt(2.0))),
        "gelu_tanh": lambda: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    }[op]()


def _contract(op, params, t):
    d = {k: v.double() for k, v in t.items() if k != "target"}
    if op in family1.UNARY:
        return _unary(op, d["x"])
    if op in ("add", "sub", "mul", "div"):
        a, b = d["a"], d["b"]
        return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    if op == "lerp":
        w = d["w"] if "w" in d else float(params.get("weight", "0.5"))
        return d["a"] + w * (d["b"] - d["a"])
    if op in ("sum", "mean", "max", "norm2"):
        x = d["x"]
        n = x.shape[-1]
        total = x.sum(-1)
        return {"sum": total, "mean": total / n, "max": x.max(-1).values, "norm2": (x * x).sum(-1).sqrt()}[op]
    if op == "softmax":
        z = d["x"]
        if "softcap" in params:
            c = float(params["softcap"])
            z = c * torch.tanh(z / c)
        z = float(params.get("scale", "1")) * z
        if "mask" in d:
            z = z + d["mask"]
        m = z.max(-1, keepdim=True).values
        dead = torch.isneginf(m)
        e = torch.exp(z - torch.where(dead, 0.0, m))
        return torch.where(dead, 0.0, e / e.sum(-1, keepdim=True))
    if op == "layernorm":
        x, eps = d["x"], float(params.get("eps", "1e-5"))
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps) * d["w"] + d["b"]
    if op == "rmsnorm":
        x, eps = d["x"], float(params.get("eps", "1e-6"))
        scale = 1 + d["w"] if params.get("form") == "gemma" else d["w"]
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * scale
    if op in ("cross_entropy", "cross_entropy_bwd"):
        logits, target = d["logits"], t["target"]
        ignore = int(params.get("ignore_index", "-100"))
        kept = target != ignore
        count = int(kept.sum())
        m = logits.max(-1, keepdim=True).values
        lse = (m + torch.log(torch.exp(logits - m).sum(-1, keepdim=True))).squeeze(-1)
        safe_target = torch.where(kept, target, 0)
        picked = logits.gather(-1, safe_target[:, None]).squeeze(-1)
        if op == "cross_entropy":
            return torch.where(kept, lse - picked, 0.0).sum() / count
        soft = torch.exp(logits - lse[:, None])
        onehot = torch.nn.functional.one_hot(safe_target, logits.shape[-1]).double()
        return torch.where(kept[:, None], (soft - onehot) / count, 0.0)
    raise AssertionError(op)


def _conditioning(op, params, t):
    """Layernorm: per row, max |x| / sqrt(var + eps) * max |w|, how far y moves per unit relative
    change of x, so any rounding error of the mean is amplified that much (over 1e6 on rows of
    1e4 whose spread is 1e-6 of the mean, or constant). 0 for the other ops, whose fixtures are
    well-conditioned. Shaped to broadcast against y."""
    if op != "layernorm":
        return torch.zeros(())
    x, eps = t["x"].double(), float(params.get("eps", "1e-5"))
    var = x.var(-1, correction=0, keepdim=True)
    return x.abs().amax(-1, keepdim=True) / torch.sqrt(var + eps) * t["w"].double().abs().max()


def test_golden_matches_the_contract_math():
    # 1e-12 of max |y|, plus, for ill-conditioned layernorm rows, 64 float64 roundings of the
    # mean amplified by the row's conditioning (torch's float64 mean and this one differ there).
    worst = (0.0, None)
    for path in _files():
        tensors, md = _load(path)
        op, _, _, params = _parse_problem(md["problem"])
        out = SIGNATURE[op][1][0]
        golden = tensors[f"golden.{out}"]
        mine = _contract(op, params, tensors)
        scale = max(mine.abs().max().item(), 1e-300)
        ratio = ((golden - mine).abs() / (1e-12 * scale + 64 * 2.0 ** -53 * _conditioning(op, params, tensors))).max().item()
        if ratio > worst[0]:
            worst = (ratio, path)
        assert ratio <= 1, f"{path}: golden differs from the contract math by {ratio:.3g} x the bound"
    print("worst difference / bound:", worst)


def test_torch_output_is_close_to_golden():
    # A sanity bound, far looser than the suite's tolerances: the generator computed torch.<out>
    # from the same inputs; a shape, layout or rounding mix-up would be far off.
    # Ill-conditioned layernorm rows may also be off by 4 f32 epsilons (torch computes in f32
    # for every dtype) times their conditioning: torch's own layernorm is far from golden there,
    # its 16-bit one even on constant rows, where golden is b exactly.
    bound = {"f32": 1e-4, "f16": 2e-2, "bf16": 6e-2}
    for path in _files():
        tensors, md = _load(path)
        op, dtype, _, params = _parse_problem(md["problem"])
        out = SIGNATURE[op][1][0]
        got, golden = tensors[f"torch.{out}"].double(), tensors[f"golden.{out}"]
        assert torch.isfinite(got).all(), f"{path}: torch.{out} has Inf/NaN where golden is finite"
        scale = max(golden.abs().max().item(), 1e-300)
        allowed = bound[dtype] * scale + 4 * 2.0 ** -23 * _conditioning(op, params, tensors)
        ratio = ((got - golden).abs() / allowed).max().item()
        assert ratio < 1, f"{path}: torch.{out} is {ratio:.3g} x the bound from golden"


def test_special_inputs():
    # Fully masked first row: 0 in both outputs; denormals really are subnormal.
    t, md = _load(FAMILY1 / "softmax" / "masked.bf16.safetensors")
    assert torch.isneginf(t["mask"][0]).all() and (t["torch.y"][0] == 0).all() and (t["golden.y"][0] == 0).all()
    assert "NaN" in md["notes"]
    for dtype in ("f32", "f16", "bf16"):
        x, _ = _load(FAMILY1 / "relu" / f"denormal.{dtype}.safetensors")
        tiny = torch.finfo(TORCH_DTYPE[dtype]).tiny
        row0 = x["x"][0].double()
        assert ((row0.abs() < tiny) & (row0 != 0)).all(), dtype
    t, _ = _load(FAMILY1 / "cross_entropy" / "ignore.f32.safetensors")
    assert (t["target"] == -100).any() and not (t["target"] == -100).all()


def test_zero_and_tiny_variance_rows():
    # constant: every row one value, over 1024 columns and a multiple of 8, with the rows of the
    # generator's list (0 among them for the norms); layernorm's golden is b there, exactly.
    # near_constant: variance at most a few 1e-6 of the squared mean, the f32 rows all spread.
    for op in ["softmax", "layernorm", "rmsnorm"]:
        for dtype in ("f32", "f16", "bf16"):
            t, _ = _load(FAMILY1 / op / f"constant.{dtype}.safetensors")
            x = t["x"].double()
            assert x.shape[-1] > 1024 and x.shape[-1] % 8 == 0 and (x == x[:, :1]).all(), (op, dtype)
            assert len(set(x[:, 0].tolist())) == x.shape[0] and x[:, 0].abs().max() > 9e3, (op, dtype)
            if op == "layernorm":
                assert (t["golden.y"] == t["b"].double()).all() and (x[:, 0] == 0).any(), dtype
            t, _ = _load(FAMILY1 / op / f"single_column.{dtype}.safetensors")
            assert t["x"].shape[-1] == 1 and t["x"].shape[0] >= 4, (op, dtype)
            t, _ = _load(FAMILY1 / op / f"near_constant.{dtype}.safetensors")
            x = t["x"].double()
            var, mean2 = x.var(-1, correction=0), x.mean(-1) ** 2
            assert (var <= 4e-6 * mean2).all(), (op, dtype)
            if dtype == "f32":
                assert (var > 0).all() and (var < 1e-11 * mean2).any(), op


def test_total_size_is_small():
    total = sum(p.stat().st_size for p in _files())
    assert total < 6.5e6, f"family1 holds {total} bytes"


def test_manifest_lists_every_file_with_its_sha256():
    manifest = json.loads(MANIFEST.read_text())
    assert manifest["schema_version"] == 1
    entries = {e["path"]: e for e in manifest["files"]}
    assert [e["path"] for e in manifest["files"]] == sorted(entries)
    for path in _files() + sorted((conftest.FIXTURES / "observed").glob("*.safetensors")):
        rel = path.relative_to(conftest.FIXTURES).as_posix()
        assert rel in entries, f"{rel} missing from the manifest"
        assert entries[rel]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), f"{rel}: stale sha256"
        _, md = _load(path)
        assert entries[rel]["problem"] == md.get("problem")
        assert entries[rel]["kind"] == ("op" if rel.startswith("family1/") else "observed")


def test_regeneration_is_byte_identical():
    # A sample of cases rebuilt in this process equals the committed bytes.
    torch.set_num_threads(1)
    wanted = {("softmax", "masked"), ("sum", "long"), ("add", "bcast_3d"), ("rmsnorm", "gemma_padded"),
              ("cross_entropy_bwd", "ignore"), ("lerp", "transposed"), ("layernorm", "near_constant"),
              ("softmax", "constant")}
    checked = 0
    for op, case, dtype in family1.all_cases():
        if (op, case.name) not in wanted:
            continue
        tensors, md = family1.build_case(op, case, dtype)
        fresh = canonical_bytes(save(tensors, metadata=md))
        assert fresh == (FAMILY1 / op / f"{case.name}.{dtype}.safetensors").read_bytes(), (op, case.name, dtype)
        checked += 1
    assert checked >= 15


def test_case_seeds_are_stable():
    # sha256-based: a change of this value changes every fixture.
    assert family1.case_seed("relu", "basic") == int.from_bytes(
        hashlib.sha256(b"family1/relu/basic").digest()[:8], "little") >> 1
    # Case names go into problem strings: no ',', ':', '@' or '='.
    for _, case, _ in family1.all_cases():
        assert re.fullmatch(r"[a-z0-9_]+", case.name), case.name
