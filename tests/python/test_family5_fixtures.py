"""The committed fixtures of family 5 (the mLSTM: mlstm, mlstm_chunkwise, mlstm_step, mlstm_bwd):
coverage, the folder's size, the file format the C++ loader relies on (signature names, shapes
and dtypes from the problem string), and every golden recomputed here in float64 from the
contract's math in another form than the generator's (the prefix-max form of the stabiliser,
m[t] = c[t] + max_{s<=t} (i[s] - c[s]); the step written out; autograd through that form).
Run: python3 -m pytest tests/python/test_family5_fixtures.py (needs torch and safetensors; not
mlstm_kernels)."""
import torch
from safetensors import safe_open

import conftest

FAMILY5 = conftest.FIXTURES / "family5"
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
EPS = 1e-6
OPS = ("mlstm", "mlstm_chunkwise", "mlstm_step", "mlstm_bwd")


def _files(op=None):
    ops = [op] if op else OPS
    return sorted(p for o in ops for p in (FAMILY5 / o).glob("*.safetensors"))


def _load(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata())


def _problem(text):
    op, dtype, shape, *rest = text.split(":")
    params = dict(kv.split("=", 1) for kv in rest[0].split(",")) if rest else {}
    assert list(params) == sorted(params), f"{text}: params not in byte order"
    return op, dtype, tuple(int(d) for d in shape.split("x")), params


def _signature(op, dtype, shape, params):
    b, nh, s, dqk = shape
    dv = int(params.get("dv", dqk))
    t = TORCH_DTYPE[dtype]
    f32 = torch.float32
    if op == "mlstm_step":
        ins = {"q": ((b, nh, dqk), t), "k": ((b, nh, dqk), t), "v": ((b, nh, dv), t), "i": ((b, nh), f32),
               "f": ((b, nh), f32), "c": ((b, nh, dqk, dv), f32), "n": ((b, nh, dqk), f32), "m": ((b, nh), f32)}
        outs = {"h": ((b, nh, dv), t), "c_new": ((b, nh, dqk, dv), f32), "n_new": ((b, nh, dqk), f32),
                "m_new": ((b, nh), f32)}
        return ins, outs
    ins = {"q": ((b, nh, s, dqk), t), "k": ((b, nh, s, dqk), t), "v": ((b, nh, s, dv), t), "i": ((b, nh, s), f32),
           "f": ((b, nh, s), f32)}
    if op == "mlstm":
        outs = {"h": ((b, nh, s, dv), t), "n": ((b, nh, s), f32), "m": ((b, nh, s), f32)}
    elif op == "mlstm_chunkwise":
        outs = {"h": ((b, nh, s, dv), t), "c_last": ((b, nh, dqk, dv), f32), "n_last": ((b, nh, dqk), f32),
                "m_last": ((b, nh), f32)}
    else:
        ins.update({"dh": ((b, nh, s, dv), t), "n": ((b, nh, s), f32), "m": ((b, nh, s), f32)})
        outs = {"dq": ((b, nh, s, dqk), t), "dk": ((b, nh, s, dqk), t), "dv": ((b, nh, s, dv), t),
                "di": ((b, nh, s), f32), "df": ((b, nh, s), f32)}
    return ins, outs


def _parallel(q, k, v, i, f):
    """h, n, m of the parallel form through the prefix-max identity (float64)."""
    c = torch.nn.functional.logsigmoid(f).cumsum(-1)
    a = i - c
    big_m = torch.cummax(a, dim=-1).values
    m = c + big_m
    s = q.shape[-2]
    causal = torch.tril(torch.ones(s, s, dtype=torch.bool))
    d = torch.where(causal, torch.exp(a[..., None, :] - big_m[..., :, None]), torch.zeros(()))
    ct = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5 * d
    n = torch.maximum(ct.sum(-1).abs(), torch.exp(-m))
    return (ct / (n + EPS)[..., None]) @ v, n, m


def _close(got, want, tol, what):
    err = (got - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    assert err <= tol * scale, f"{what}: {err} against {tol} x {scale}"


def test_every_op_has_fixtures_and_the_folder_stays_small():
    for op in OPS:
        names = {p.name.split(".")[0] for p in _files(op)}
        assert "basic" in names and len(names) >= 5, op
    total = sum(p.stat().st_size for p in _files())
    assert total < 1_500_000, f"family5/ holds {total} bytes"


def test_format_and_metadata():
    for path in _files():
        tensors, md = _load(path)
        op, dtype, shape, params = _problem(md["problem"])
        assert (op, dtype, md["case"], params["fixture"]) == (path.parent.name, path.name.split(".")[1],
                                                               path.name.split(".")[0], md["case"])
        assert md["notes"].endswith("mlstm_kernels 2.0.6"), path
        ins, outs = _signature(op, dtype, shape, params)
        for name, (want_shape, want_dtype) in ins.items():
            assert tuple(tensors[name].shape) == want_shape and tensors[name].dtype == want_dtype, (path, name)
        for name, (want_shape, want_dtype) in outs.items():
            golden = tensors[f"golden.{name}"]
            assert tuple(golden.shape) == want_shape and golden.dtype == torch.float64, (path, name)
            assert torch.isfinite(golden).all(), (path, name)
            if f"torch.{name}" in tensors:
                assert tensors[f"torch.{name}"].dtype == want_dtype, (path, name)


def test_parallel_goldens():
    for path in _files("mlstm") + _files("mlstm_chunkwise"):
        t, _ = _load(path)
        h, n, m = _parallel(*(t[x].double() for x in "qkvif"))
        _close(t["golden.h"], h, 1e-9, f"{path}: h")
        if "golden.n" in t:
            _close(t["golden.n"], n, 1e-9, f"{path}: n")
            _close(t["golden.m"], m, 1e-9, f"{path}: m")


def test_chunkwise_last_states():
    for path in _files("mlstm_chunkwise"):
        t, _ = _load(path)
        q, k, v, i, f = (t[x].double() for x in "qkvif")
        c = torch.nn.functional.logsigmoid(f).cumsum(-1)
        # From the zero state (m0 = 0): m = max(c[-1], max_s c[-1] - c[s] + i[s]).
        log_w = c[..., -1:] - c + i
        m = torch.maximum(c[..., -1], log_w.max(-1).values)
        w = torch.exp(log_w - m[..., None])
        _close(t["golden.m_last"], m, 1e-9, f"{path}: m_last")
        _close(t["golden.c_last"], torch.einsum("bhs,bhsd,bhse->bhde", w, k, v), 1e-9, f"{path}: c_last")
        _close(t["golden.n_last"], torch.einsum("bhs,bhsd->bhd", w, k), 1e-9, f"{path}: n_last")


def test_step_goldens():
    for path in _files("mlstm_step"):
        t, _ = _load(path)
        q, k, v, i, f, c, n, m = (t[x].double() for x in ("q", "k", "v", "i", "f", "c", "n", "m"))
        log_f = torch.nn.functional.logsigmoid(f)
        m_new = torch.maximum(log_f + m, i)
        a, b = torch.exp(log_f + m - m_new), torch.exp(i - m_new)
        c_new = a[..., None, None] * c + b[..., None, None] * k[..., :, None] * v[..., None, :]
        n_new = a[..., None] * n + b[..., None] * k
        qs = q * q.shape[-1] ** -0.5
        den = torch.maximum((qs * n_new).sum(-1).abs(), torch.exp(-m_new)) + EPS
        h = torch.einsum("bhd,bhde->bhe", qs, c_new) / den[..., None]
        for name, want in (("h", h), ("c_new", c_new), ("n_new", n_new), ("m_new", m_new)):
            _close(t[f"golden.{name}"], want, 1e-9, f"{path}: {name}")


def test_backward_goldens():
    for path in _files("mlstm_bwd"):
        t, _ = _load(path)
        leaves = [t[x].double().requires_grad_(True) for x in "qkvif"]
        h, _, _ = _parallel(*leaves)
        h.backward(t["dh"].double())
        for name, leaf in zip(("dq", "dk", "dv", "di", "df"), leaves):
            _close(t[f"golden.{name}"], leaf.grad, 1e-8, f"{path}: {name}")


def test_torch_is_near_the_golden():
    """torch's own same-dtype h stays within a few units of its dtype, plus its exponents' f32
    error, of the golden's scale."""
    unit = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
    for path in _files("mlstm") + _files("mlstm_step"):
        t, md = _load(path)
        dtype = md["dtype"]
        golden = t["golden.h"]
        err = (t["torch.h"].double() - golden).abs().max().item()
        # torch forms c[t] - c[s] in f32: an exponent error of about 2^-24 |c| (|c| ~ 8e3 in the
        # long case; docs/ops-family5.md).
        c_max = torch.nn.functional.logsigmoid(t["f"].double()).cumsum(-1).abs().max().item()
        allowed = (64 * unit[dtype] + 16 * 2.0 ** -24 * c_max) * max(1.0, golden.abs().max().item())
        assert err <= allowed, f"{path}: torch.h off by {err}"
