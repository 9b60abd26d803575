"""The committed family-2 fixtures (matmul, linear, gemv, dot, permute, concat, slice,
embedding, repeat_kv): coverage, the file format the C++ loader relies on (signature names,
per-operand dtypes, shapes from the problem string), every golden recomputed here in float64
from the contract's math without the torch calls the generator used, torch's output near it
(bit-equal for the copies), and the properties the edge cases exist for.
Run: python3 -m pytest tests/python (needs torch and safetensors)."""
import hashlib
import json
import re

import torch
from safetensors import safe_open
from safetensors.torch import save

import conftest
import generate
from gen import family2
from gen.stfile import canonical_bytes

FAMILY2 = conftest.FIXTURES / "family2"
MANIFEST = conftest.FIXTURES / "manifest.json"
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
               "i32": torch.int32, "i64": torch.int64}
# The contract's signatures (inputs in order; every op has the one output y).
SIGNATURE = {
    "matmul": ["a", "b"], "linear": ["x", "w", "b"], "gemv": ["w", "x"], "dot": ["a", "b"],
    "permute": ["x"], "concat": ["a", "b"], "slice": ["x"], "embedding": ["ids", "table"],
    "repeat_kv": ["x"],
}
PRODUCTS = ("matmul", "linear", "gemv", "dot")


def _files():
    return sorted(FAMILY2.glob("*/*.safetensors"))


def _load(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata())


def _parse_problem(text):
    op, dtype, shape, *rest = text.split(":")
    assert len(rest) <= 1, text
    params = dict(kv.split("=", 1) for kv in rest[0].split(",")) if rest else {}
    keys = [kv.split("=", 1)[0] for kv in rest[0].split(",")] if rest else []
    assert keys == sorted(keys), f"{text}: params not in byte order"
    return op, dtype, tuple(int(d) for d in shape.split("x")), params


def _shape(text):
    return tuple(int(d) for d in text.split("x"))


def _operand_shapes(op, shape, params):
    """Logical input shapes from the problem, as the contract's table gives them."""
    if op == "matmul":
        *b, m, n, k = shape
        return {"a": (*b, m, k), "b": (*b, k, n)}
    if op == "linear":
        m, n, k = shape
        out = {"x": (m, k), "w": (n, k)}
        if params.get("bias", "0") == "1":
            out["b"] = (n,)
        return out
    if op == "gemv":
        n, k = shape
        return {"w": (n, k), "x": (int(params.get("batch", "1")), k)}
    if op == "dot":
        return {"a": shape, "b": shape}
    if op == "concat":
        return {"a": shape, "b": _shape(params["b"]) if "b" in params else shape}
    if op == "embedding":
        t, v, d = shape
        return {"ids": (t,), "table": (v, d)}
    return {"x": shape}


def _operand_dtype(name, dtype, params):
    if name == "ids":
        return params.get("ids.dt", "i64")
    return params.get(f"{name}.dt", dtype)


# ------------------------------------------------------------ coverage and format

def test_files_are_exactly_the_generators_cases():
    want = {f"{op}/{case.name}.{dtype}.safetensors" for op, case, dtype in family2.all_cases()}
    have = {p.relative_to(FAMILY2).as_posix() for p in _files()}
    assert have == want, f"missing {sorted(want - have)[:5]}, stale {sorted(have - want)[:5]}"
    assert {p.split("/")[0] for p in have} == set(SIGNATURE)


def test_edge_cases_are_present():
    cases = {}
    for path in _files():
        cases.setdefault(path.parent.name, set()).add(path.name.split(".")[0])
    for op in SIGNATURE:
        first = sorted(cases[op])[0]
        dtypes = {p.name.split(".")[1] for p in (FAMILY2 / op).glob(f"{first}.*")}
        assert dtypes == {"f32", "f16", "bf16"}, (op, first)
    assert {"k1", "primes", "single_row", "batched", "a_transposed", "b_transposed", "both_transposed",
            "padded", "long_k", "large", "out_f32", "tf32"} <= cases["matmul"]
    assert {"bias", "x_padded", "single_token", "out_f32"} <= cases["linear"]
    assert {"odd", "batch8", "out_f32"} <= cases["gemv"]
    assert {"batched", "long", "out_f32"} <= cases["dot"]
    assert {"identity", "2d", "3d", "4d"} <= cases["permute"]
    assert {"dim0", "middle", "same_shape"} <= cases["concat"]
    assert {"first", "middle", "whole"} <= cases["slice"]
    assert {"large_vocab", "ids_i32"} <= cases["embedding"]
    assert {"gqa", "n_rep1"} <= cases["repeat_kv"]


def test_problem_strings():
    # Exactly the contract's form, params sorted by key, fixture=<case> added.
    want = {
        "matmul/b_transposed.bf16": "matmul:bf16:40x24x56:b.layout=transposed,fixture=b_transposed",
        "matmul/both_transposed.f16": "matmul:f16:40x24x56:a.layout=transposed,b.layout=transposed,fixture=both_transposed",
        "matmul/batched.f32": "matmul:f32:3x33x65x47:fixture=batched",
        "matmul/out_f32.bf16": "matmul:bf16:24x40x56:fixture=out_f32,y.dt=f32",
        "matmul/tf32.f32": "matmul:f32:32x32x64:fixture=tf32,tf32=1",
        "linear/x_padded.f32": "linear:f32:12x20x28:bias=1,fixture=x_padded,x.layout=padded",
        "gemv/batch8.f16": "gemv:f16:256x512:batch=8,fixture=batch8",
        "dot/basic.f32": "dot:f32:256:fixture=basic",
        "permute/basic.f32": "permute:f32:2x3x5x7:fixture=basic,perm=0213",
        "concat/middle.f32": "concat:f32:2x3x4:b=2x6x4,dim=1,fixture=middle",
        "slice/last.f32": "slice:f32:8x40:fixture=last,len=17,start=5",
        "embedding/ids_i32.bf16": "embedding:bf16:6x40x24:fixture=ids_i32,ids.dt=i32",
        "repeat_kv/gqa.f32": "repeat_kv:f32:2x4x7x16:fixture=gqa,n_rep=2",
    }
    for name, problem in want.items():
        _, md = _load(FAMILY2 / f"{name}.safetensors")
        assert md["problem"] == problem, name


def test_format_and_metadata():
    for path in _files():
        tensors, md = _load(path)
        op, dtype, shape, params = _parse_problem(md["problem"])
        case = path.name.split(".")[0]
        assert (op, dtype, md["op"], md["dtype"], md["case"]) == (path.parent.name, path.name.split(".")[1], op, dtype, case)
        assert params["fixture"] == case and json.loads(md["params"]) == params
        assert md["generator"] == "suites/fixtures/gen/family2.py" and md["torch_version"] and int(md["seed"]) >= 0
        shapes = _operand_shapes(op, shape, params)
        assert [n for n in SIGNATURE[op] if n in tensors] == list(shapes), path
        assert set(tensors) == set(shapes) | {"torch.y", "golden.y"}, path
        for name, want in shapes.items():
            t = tensors[name]
            assert tuple(t.shape) == want, f"{path}: {name} is {tuple(t.shape)}, not {want}"
            assert t.dtype == TORCH_DTYPE[_operand_dtype(name, dtype, params)], f"{path}: {name} is {t.dtype}"
        assert tensors["torch.y"].dtype == TORCH_DTYPE[_operand_dtype("y", dtype, params)], path
        assert tensors["golden.y"].dtype == torch.float64
        assert tensors["torch.y"].shape == tensors["golden.y"].shape
        assert torch.isfinite(tensors["golden.y"]).all(), f"{path}: golden has Inf/NaN"
        for key in params:
            if key.endswith(".layout"):
                assert key.split(".")[0] in SIGNATURE[op] and params[key] in ("transposed", "padded"), path
                assert "torch computed on a view" in md["notes"], path
        if "y.dt" in params:
            assert op in PRODUCTS and dtype in ("f16", "bf16") and params["y.dt"] == "f32", path


# ------------------------------------------------------------ the contract's math in float64

def _contract(op, params, t):
    """y from the stored inputs, written out here: sums of products in float64, and index
    arithmetic for the copies (never the torch op the generator called)."""
    d = {k: v.double() for k, v in t.items() if k not in ("ids", "torch.y", "golden.y")}
    if op == "matmul":
        return (d["a"][..., :, :, None] * d["b"][..., None, :, :]).sum(-2)
    if op == "linear":
        y = (d["x"][:, None, :] * d["w"][None, :, :]).sum(-1)
        return y + d["b"] if "b" in d else y
    if op == "gemv":
        return (d["w"][None, :, :] * d["x"][:, None, :]).sum(-1)
    if op == "dot":
        return (d["a"] * d["b"]).sum(-1)
    return None  # the copies: see _copy


def _copy(op, params, t):
    """The copies, on the stored tensors in their own dtype, element by element via indices."""
    if op == "permute":
        x = t["x"]
        perm = [int(c) for c in params["perm"]]
        out_shape = [x.shape[p] for p in perm]
        idx = torch.arange(x.numel()).reshape(x.shape)  # storage index of every x element
        # y[i_0..] = x[j] with j[perm[k]] = i_k: the inverse permutation applied to y's indices.
        grid = torch.meshgrid(*[torch.arange(n) for n in out_shape], indexing="ij")
        src = [None] * x.dim()
        for k, p in enumerate(perm):
            src[p] = grid[k]
        return x.reshape(-1)[idx[tuple(src)]]
    if op == "concat":
        a, b = t["a"], t["b"]
        dim = int(params.get("dim", a.dim() - 1))
        shape = list(a.shape)
        shape[dim] += b.shape[dim]
        y = torch.empty(shape, dtype=a.dtype)
        y[(slice(None),) * dim + (slice(0, a.shape[dim]),)] = a
        y[(slice(None),) * dim + (slice(a.shape[dim], None),)] = b
        return y
    if op == "slice":
        x = t["x"]
        dim = int(params.get("dim", x.dim() - 1))
        start, length = int(params.get("start", "0")), int(params["len"])
        return x[(slice(None),) * dim + (slice(start, start + length),)]
    if op == "embedding":
        return t["table"][t["ids"].long()]
    if op == "repeat_kv":
        x, r = t["x"], int(params["n_rep"])
        return x[:, torch.arange(x.shape[1] * r) // r]
    raise AssertionError(op)


def _magnitude(op, t):
    """|a| @ |b| per output in float64: the scale of a sum of products' rounding errors."""
    d = {k: v.double().abs() for k, v in t.items() if k in ("a", "b", "x", "w")}
    return _contract(op, {}, d) if op != "linear" else (d["x"][:, None, :] * d["w"][None, :, :]).sum(-1)


def _bits(x):
    return x.contiguous().view({2: torch.int16, 4: torch.int32}[x.element_size()])


def test_golden_matches_the_contract_math():
    worst = (0.0, None)
    for path in _files():
        tensors, md = _load(path)
        op, _, _, params = _parse_problem(md["problem"])
        golden = tensors["golden.y"]
        if op in PRODUCTS:
            mine = _contract(op, params, tensors)
            # float64 summation orders differ: 1e-13 of sum |a||b| per output (K <= 65536).
            bound = 1e-13 * _magnitude(op, tensors) + 1e-300
            ratio = ((golden - mine).abs() / bound).max().item()
            if ratio > worst[0]:
                worst = (ratio, path)
            assert ratio <= 1, f"{path}: golden differs from the contract math by {ratio:.3g} x the bound"
        else:
            mine = _copy(op, params, tensors)
            assert torch.equal(_bits(tensors["torch.y"]), _bits(mine)), f"{path}: torch.y is not the copy, bit for bit"
            assert torch.equal(golden, mine.double()), path
    print("worst difference / bound:", worst)


def test_torch_output_is_close_to_golden():
    # A sanity bound, looser than the suite's tolerances: output rounding of the output dtype
    # plus K * 2^-24 of |a| @ |b| (f32 accumulation's worst case). torch.linalg.vecdot (batched
    # dot) in f16 / bf16 rounds each product to the dtype first: u_dtype of |a| @ |b| more.
    eps = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
    for path in _files():
        tensors, md = _load(path)
        op, dtype, _, params = _parse_problem(md["problem"])
        if op not in PRODUCTS:
            continue
        got, golden = tensors["torch.y"].double(), tensors["golden.y"]
        assert torch.isfinite(got).all(), f"{path}: torch.y has Inf/NaN"
        k = tensors[{"gemv": "w", "linear": "x"}.get(op, "a")].shape[-1]
        allowed = eps[params.get("y.dt", dtype)] * golden.abs() + k * 2.0 ** -24 * _magnitude(op, tensors)
        if op == "dot" and golden.dim() == 1 and dtype != "f32":
            assert "rounds every product" in md["notes"], path
            allowed = allowed + eps[dtype] * _magnitude(op, tensors)
        ratio = ((got - golden).abs() / (allowed + 1e-300)).max().item()
        assert ratio <= 1, f"{path}: torch.y is {ratio:.3g} x the bound from golden"


# ------------------------------------------------------------ what the edge cases are for

def _accumulate(a, b, dtype):
    """a @ b summed over k in order, the running sum rounded to `dtype` after each add."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=dtype)
    for k in range(a.shape[1]):
        acc = (acc.double() + a[:, k, None].double() * b[None, k, :].double()).to(dtype)
    return acc.double()


def test_long_k_fails_with_a_16_bit_accumulator_and_passes_with_f32():
    for dtype in ("f16", "bf16"):
        t, _ = _load(FAMILY2 / "matmul" / f"long_k.{dtype}.safetensors")
        a, b, golden = t["a"], t["b"], t["golden.y"]
        assert a.shape[1] == 8192 and (a >= 0).all() and (b >= 0).all()
        half = (_accumulate(a, b, torch.float16) - golden).abs() / golden
        single = (_accumulate(a, b, torch.float32) - golden).abs() / golden
        assert half.min() > 0.1, f"{dtype}: an f16 accumulator is only {half.min():.3g} off"
        assert single.max() < 1e-5, f"{dtype}: f32 accumulation is {single.max():.3g} off"


def test_large_products_are_near_the_range_and_finite():
    for dtype, floor in (("f32", 1e37), ("bf16", 1e37), ("f16", 1e4)):
        t, _ = _load(FAMILY2 / "matmul" / f"large.{dtype}.safetensors")
        y = t["torch.y"]
        assert torch.isfinite(y).all() and y.double().abs().max() > floor, dtype
        worst = t["a"].shape[-1] * t["a"].double().abs().max() * t["b"].double().abs().max()
        assert worst < torch.finfo(TORCH_DTYPE[dtype]).max, dtype


def test_notes_and_special_inputs():
    _, md = _load(FAMILY2 / "matmul" / "tf32.f32.safetensors")
    assert "without tf32" in md["notes"]
    t, _ = _load(FAMILY2 / "matmul" / "k1.f32.safetensors")
    assert t["a"].shape[-1] == 1
    for dtype in ("f32", "f16", "bf16"):
        t, _ = _load(FAMILY2 / "embedding" / f"basic.{dtype}.safetensors")
        ids, v = t["ids"], t["table"].shape[0]
        assert ids.dtype == torch.int64 and 0 in ids.tolist() and v - 1 in ids.tolist()
        assert len(set(ids.tolist())) < ids.numel(), "no repeated id"
        # The copies' inputs hold -0.0, subnormals and the largest finite value.
        x = t["table"]
        info = torch.finfo(x.dtype)
        flat = x.reshape(-1).double()
        assert ((flat == 0) & torch.signbit(flat)).any(), dtype
        assert ((flat != 0) & (flat.abs() < info.smallest_normal)).any(), dtype
        assert (flat.abs() == info.max).any(), dtype
    t, _ = _load(FAMILY2 / "embedding" / "ids_i32.f32.safetensors")
    assert t["ids"].dtype == torch.int32


def test_total_size_is_small():
    total = sum(p.stat().st_size for p in _files())
    assert total < 6e6, f"family2 holds {total} bytes"


def test_manifest_lists_every_file_with_its_sha256():
    manifest = json.loads(MANIFEST.read_text())
    entries = {e["path"]: e for e in manifest["files"]}
    for path in _files():
        rel = path.relative_to(conftest.FIXTURES).as_posix()
        assert rel in entries, f"{rel} missing from the manifest"
        assert entries[rel]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), f"{rel}: stale sha256"
        _, md = _load(path)
        assert entries[rel]["problem"] == md["problem"] and entries[rel]["kind"] == "op"
    # Every entry belongs to one part's folder, with that part's kind.
    folders = {p.folder: p.kind for p in generate.PARTS.values()}
    for rel, e in entries.items():
        assert folders.get(rel.split("/")[0]) == e["kind"], rel


def test_generate_finds_the_family_parts():
    assert {"family1", "family2", "casts", "observed"} <= set(generate.PARTS)
    assert (generate.PARTS["family2"].folder, generate.PARTS["family2"].kind) == ("family2", "op")
    assert generate.owned_by("family2/dot/basic.f32.safetensors", ["family2"])
    assert not generate.owned_by("family1/relu/basic.f32.safetensors", ["family2"])


def test_regeneration_is_byte_identical():
    # A sample of cases rebuilt in this process equals the committed bytes.
    torch.set_num_threads(1)
    wanted = {("matmul", "both_transposed"), ("matmul", "batched"), ("linear", "out_f32"), ("gemv", "odd"),
              ("dot", "batched"), ("permute", "4d"), ("embedding", "ids_i32"), ("repeat_kv", "n_rep1")}
    checked = 0
    for op, case, dtype in family2.all_cases():
        if (op, case.name) not in wanted:
            continue
        tensors, md = family2.build_case(op, case, dtype)
        fresh = canonical_bytes(save(tensors, metadata=md))
        assert fresh == (FAMILY2 / op / f"{case.name}.{dtype}.safetensors").read_bytes(), (op, case.name, dtype)
        checked += 1
    assert checked >= 20


def test_case_seeds_are_stable_and_names_plain():
    assert family2.case_seed("matmul", "basic") == int.from_bytes(
        hashlib.sha256(b"family2/matmul/basic").digest()[:8], "little") >> 1
    for _, case, _ in family2.all_cases():
        assert re.fullmatch(r"[a-z0-9_]+", case.name), case.name
