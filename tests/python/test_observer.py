"""The module observer: what it captures equals a rerun of the module, for modules built in
the test and for the committed files observed/layernorm.safetensors and sequential.safetensors.
Run: python3 -m pytest tests/python (needs torch and safetensors)."""
import json
import pathlib

import torch
from safetensors import safe_open
from safetensors.torch import load_file

import conftest  # noqa: F401  (sys.path)
import observer

OBSERVED = conftest.FIXTURES / "observed"


def _read(path):
    with safe_open(str(path), framework="pt") as f:
        return load_file(str(path)), dict(f.metadata())


def test_layernorm_capture_equals_rerun():
    ln, (x,) = observer.demo_layernorm()
    out, obs = observer.observe(ln, x)
    t, md = obs.tensors(), obs.metadata()
    assert set(t) == {"input.0", "output.0", "weight.weight", "weight.bias"}
    assert torch.equal(t["input.0"], x)
    with torch.no_grad():
        rerun = ln(t["input.0"])
    assert torch.equal(t["output.0"], rerun) and torch.equal(t["output.0"], out)
    config = json.loads(md["config"])
    assert md["module"] == "LayerNorm" and config["attributes"]["eps"] == ln.eps
    assert config["attributes"]["normalized_shape"] == [64]
    # The demo's weights are random, not LayerNorm's default ones and zeros.
    assert not torch.equal(t["weight.weight"], torch.ones(64))
    assert not torch.equal(t["weight.bias"], torch.zeros(64))


def test_committed_layernorm_file_equals_rerun():
    t, md = _read(OBSERVED / "layernorm.safetensors")
    config = json.loads(md["config"])["attributes"]
    ln = torch.nn.LayerNorm(config["normalized_shape"], eps=config["eps"])
    ln.load_state_dict({"weight": t["weight.weight"], "bias": t["weight.bias"]})
    with torch.no_grad():
        rerun = ln(t["input.0"])
    assert torch.allclose(rerun, t["output.0"], rtol=1e-6, atol=1e-6)
    assert md["torch_version"]


def test_sequential_submodules_chain():
    model, (x,) = observer.demo_sequential()
    out, obs = observer.observe(model, x, submodules=True)
    t, md = obs.tensors(), obs.metadata()
    assert json.loads(md["submodules"]) == ["0/", "1/", "2/"]
    assert md["0/module"] == "Linear" and md["1/module"] == "GELU" and md["2/module"] == "Linear"
    assert json.loads(md["1/config"])["attributes"]["approximate"] == "tanh"
    # Each submodule's output is the next one's input, the last is the model's output.
    assert torch.equal(t["0/output.0"], t["1/input.0"]) and torch.equal(t["1/output.0"], t["2/input.0"])
    assert torch.equal(t["2/output.0"], t["output.0"]) and torch.equal(t["output.0"], out)
    with torch.no_grad():
        assert torch.equal(model[0](t["0/input.0"]), t["0/output.0"])
        assert torch.equal(model(t["input.0"]), t["output.0"])
    assert torch.equal(t["0/weight.weight"], t["weight.0.weight"])


def test_committed_sequential_file_equals_rerun():
    t, md = _read(OBSERVED / "sequential.safetensors")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(32, 8))
    model.load_state_dict({k[len("weight."):]: v for k, v in t.items() if k.startswith("weight.")})
    with torch.no_grad():
        assert torch.allclose(model(t["input.0"]), t["output.0"], rtol=1e-6, atol=1e-6)
        assert torch.allclose(model[2](t["2/input.0"]), t["2/output.0"], rtol=1e-6, atol=1e-6)


class _KwargModule(torch.nn.Module):
    def forward(self, x, *, bias=None, flag=True):
        y = x * 2 if flag else x
        return (y + bias, {"aux": y.sum()}) if bias is not None else (y, None)


def test_keyword_inputs_and_structured_outputs():
    m = _KwargModule()
    x, bias = torch.randn(3, 4), torch.randn(4)
    with observer.ModuleObserver(m) as obs:
        m(x, bias=bias, flag=False)
        m(x)  # a second call is counted, not recorded
    t, md = obs.tensors(), obs.metadata()
    assert torch.equal(t["input.0"], x) and torch.equal(t["input.bias"], bias)
    assert json.loads(md["inputs"]) == {"input.flag": False}
    assert torch.equal(t["output.0"], x + bias) and torch.equal(t["output.1.aux"], x.sum())
    assert md["calls"] == "2"
    # The hooks are gone after the with-block.
    assert not m._forward_hooks and not m._forward_hooks_with_kwargs


def test_save_is_deterministic(tmp_path):
    ln, (x,) = observer.demo_layernorm()
    _, obs = observer.observe(ln, x)
    a = obs.save(tmp_path / "a.safetensors").read_bytes()
    b = obs.save(tmp_path / "b.safetensors").read_bytes()
    assert a == b
    committed = (OBSERVED / "layernorm.safetensors").read_bytes()
    assert a == committed, "observed/layernorm.safetensors is stale: run suites/fixtures/generate.py"
