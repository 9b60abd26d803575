"""The committed fixtures of family 3's gating ops (swiglu, geglu, swiglu_bwd, geglu_bwd):
coverage, the file format the C++ loader relies on (signature names, shapes from the problem
string), every golden recomputed here in float64 from the contract's math in another form than
the generator's torch calls (the sigmoid form of gelu_tanh and closed-form derivatives, no
autograd), torch's output near it, and the properties the edge cases exist for.
Run: python3 -m pytest tests/python (needs torch and safetensors)."""
import hashlib
import json
import math

import torch
from safetensors import safe_open
from safetensors.torch import save

import conftest
from gen import family3_glu
from gen.stfile import canonical_bytes

FAMILY3 = conftest.FIXTURES / "family3"
MANIFEST = conftest.FIXTURES / "manifest.json"
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
INPUTS = {"swiglu": ["a", "b"], "geglu": ["a", "b"], "swiglu_bwd": ["a", "b", "dy"], "geglu_bwd": ["a", "b", "dy"]}
OUTPUTS = {"swiglu": ["y"], "geglu": ["y"], "swiglu_bwd": ["da", "db"], "geglu_bwd": ["da", "db"]}


def _files():
    return sorted(p for op in family3_glu.OPS for p in (FAMILY3 / op).glob("*.safetensors"))


def _load(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata())


def _parse_problem(text):
    op, dtype, shape, *rest = text.split(":")
    params = dict(kv.split("=", 1) for kv in rest[0].split(",")) if rest else {}
    assert list(params) == sorted(params), f"{text}: params not in byte order"
    return op, dtype, tuple(int(d) for d in shape.split("x")), params


def test_files_are_exactly_the_generators_cases():
    want = {f"{op}/{case.name}.{dtype}.safetensors" for op, case, dtype in family3_glu.all_cases()}
    have = {p.relative_to(FAMILY3).as_posix() for p in _files()}
    assert have == want, f"missing {sorted(want - have)[:5]}, stale {sorted(have - want)[:5]}"
    for op in family3_glu.OPS:
        names = {p.name.split(".")[0] for p in (FAMILY3 / op).glob("*.safetensors")}
        assert {"basic", "one", "rank3", "large", "near_zero", "transposed", "padded", "b_transposed"} <= names, op
        if op.endswith("_bwd"):
            assert "dy_transposed" in names, op


def test_format_and_metadata():
    for path in _files():
        tensors, md = _load(path)
        op, dtype, shape, params = _parse_problem(md["problem"])
        case = path.name.split(".")[0]
        assert (op, dtype, md["case"]) == (path.parent.name, path.name.split(".")[1], case)
        assert params["fixture"] == case and json.loads(md["params"]) == params
        assert md["generator"] == "suites/fixtures/gen/family3_glu.py"
        outs = OUTPUTS[op]
        assert set(tensors) == set(INPUTS[op]) | {f"{p}.{o}" for p in ("torch", "golden") for o in outs}, path
        for name in INPUTS[op]:
            assert tuple(tensors[name].shape) == shape and tensors[name].dtype == TORCH_DTYPE[dtype], (path, name)
        for o in outs:
            assert tensors[f"torch.{o}"].dtype == TORCH_DTYPE[dtype] and tuple(tensors[f"torch.{o}"].shape) == shape
            assert tensors[f"golden.{o}"].dtype == torch.float64 and torch.isfinite(tensors[f"golden.{o}"]).all()
        for key, value in params.items():
            if key == "layout" or key.endswith(".layout"):
                assert key.split(".")[0] in INPUTS[op] + ["layout"] and value in ("transposed", "padded"), path
                assert "torch computed on a view" in md["notes"], path


def _sigmoid(x):
    return 1.0 / (1.0 + torch.exp(-x))


def _gate(op, a):
    """(g(a), g'(a)) in float64: silu, and gelu_tanh as a sigmoid(2u) with 1 - tanh^2 = 4 s (1 - s)."""
    if op.startswith("swiglu"):
        s = _sigmoid(a)
        return a * s, s + a * s * (1.0 - s)
    k, c = math.sqrt(2.0 / math.pi), 0.044715
    s = _sigmoid(2.0 * k * (a + c * a ** 3))
    return a * s, s + 2.0 * a * s * (1.0 - s) * k * (1.0 + 3.0 * c * a * a)


def _contract(op, t):
    a, b = t["a"].double(), t["b"].double()
    g, slope = _gate(op, a)
    if not op.endswith("_bwd"):
        return {"y": g * b}
    dy = t["dy"].double()
    return {"da": dy * b * slope, "db": dy * g}


def test_golden_matches_the_contract_math():
    for path in _files():
        tensors, md = _load(path)
        op = md["op"]
        for name, mine in _contract(op, tensors).items():
            golden = tensors[f"golden.{name}"]
            # Two float64 evaluations of one formula: a few 1e-16 of the operands' scale.
            scale = tensors["b"].double().abs() * (tensors["dy"].double().abs() if "dy" in tensors else 1.0)
            bound = 1e-13 * (mine.abs() + scale) + 1e-300
            ratio = ((golden - mine).abs() / bound).max().item()
            assert ratio <= 1, f"{path}: golden.{name} differs from the contract math by {ratio:.3g} x the bound"


def test_torch_output_is_close_to_golden():
    # A sanity bound on torch's own error, relative to |golden| + rms(golden): in f16 and bf16
    # torch rounds each stage (g(a), then times b; dy * b, then the gate's backward) to the
    # dtype, within 1 eps here; 2 eps. In f32 its backward forms 1 - sigmoid and 1 - tanh^2 by
    # subtraction, a few eps of absolute error times |a| k (1 + 3 c a^2), up to 8 eps on the
    # large gates; 16 eps.
    units = {"f32": 16, "f16": 2, "bf16": 2}
    for path in _files():
        tensors, md = _load(path)
        op, dtype = md["op"], md["dtype"]
        for name in OUTPUTS[op]:
            got, golden = tensors[f"torch.{name}"].double(), tensors[f"golden.{name}"]
            rms = golden.pow(2).mean().sqrt().item()
            allowed = units[dtype] * EPS[dtype] * (golden.abs() + rms) + 1e-300
            ratio = ((got - golden).abs() / allowed).max().item()
            assert ratio <= 1, f"{path}: torch.{name} is {ratio:.3g} x the bound from golden"


def test_edge_cases_reach_what_they_are_for():
    for op in family3_glu.OPS:
        for dtype in TORCH_DTYPE:
            t, _ = _load(FAMILY3 / op / f"large.{dtype}.safetensors")
            a = t["a"].double()
            assert a.abs().max() > 25 and (a < -20).any() and (a > 20).any(), (op, dtype)
            g, slope = _gate(op, a)
            assert ((a < -20) <= (g.abs() < 1e-6)).all() and ((a > 20) <= ((slope - 1).abs() < 1e-6)).all()
            t, _ = _load(FAMILY3 / op / f"near_zero.{dtype}.safetensors")
            a = t["a"].double()
            info = torch.finfo(TORCH_DTYPE[dtype])
            assert a.abs().max() < 0.01 and ((a != 0) & (a.abs() < info.smallest_normal)).any(), (op, dtype)


def test_regeneration_is_byte_identical():
    torch.set_num_threads(1)
    wanted = {("swiglu", "odd"), ("geglu", "transposed"), ("swiglu_bwd", "near_zero"), ("geglu_bwd", "dy_transposed"),
              ("geglu_bwd", "large")}
    checked = 0
    for op, case, dtype in family3_glu.all_cases():
        if (op, case.name) not in wanted:
            continue
        tensors, md = family3_glu.build_case(op, case, dtype)
        fresh = canonical_bytes(save(tensors, metadata=md))
        assert fresh == (FAMILY3 / op / f"{case.name}.{dtype}.safetensors").read_bytes(), (op, case.name, dtype)
        checked += 1
    assert checked == 3 * len(wanted)


def test_manifest_lists_every_file_with_its_sha256():
    entries = {e["path"]: e for e in json.loads(MANIFEST.read_text())["files"]}
    for path in _files():
        rel = path.relative_to(conftest.FIXTURES).as_posix()
        assert rel in entries, f"{rel} missing from the manifest"
        assert entries[rel]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), f"{rel}: stale sha256"
        _, md = _load(path)
        assert entries[rel]["problem"] == md["problem"] and entries[rel]["kind"] == "op"


def test_total_size_is_small():
    total = sum(p.stat().st_size for p in _files())
    assert total < 4e6, f"the gating fixtures hold {total} bytes"
