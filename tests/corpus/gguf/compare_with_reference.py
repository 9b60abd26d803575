#!/usr/bin/env python3
"""Run `dnnblocks inspect --json` and gguf-py's GGUFReader over the GGUF corpus, random edits
of the valid files, and every file of the extra DIRs (a fuzzing corpus, real models), and
report every file the two judge or read differently.

Usage: python3 tests/corpus/gguf/compare_with_reference.py BUILD/bin/dnnblocks [COUNT [DIR...]]
Exits 0 when there is no unexplained difference, 1 otherwise, 77 when python3 lacks gguf.

GGUFReader is not the format's strict reader: it checks the magic, version, duplicate keys and
tensor names and the alignment key, reads nested arrays, and reads the rest as numpy views that
silently come up short at the end of the file (and loops over an array count from the file
without checking it: a worker with a timeout runs it). ggml's reader (ggml/src/gguf.cpp), which
llama.cpp loads models with and dnnblocks follows, refuses more. So a file dnnblocks refuses
and GGUFReader accepts is explained when dnnblocks' rule is one GGUFReader does not check
(LAX_RULES); anything else is a difference. Files both accept must agree on the version,
alignment, every key's type and value, and every tensor's name, ggml type, dims and data
offset (the data offset only when there are tensors: GGUFReader pads even without). Also
explained: GGUFReader failing to shape a zero-element tensor whose other dims multiply past
2^63, which ggml accepts.
"""
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from gguf import GGUFReader, GGUFValueType
except ImportError as e:  # pragma: no cover
    print(f"SKIP: python3 lacks the gguf package ({e}): pip install gguf")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))

# dnnblocks rules that GGUFReader does not check (ggml's reader does, or llama.cpp's loader).
LAX_RULES = {
    "truncated", "count", "count-past-eof", "string-length", "array-length", "empty-key",
    "value-type", "name-length", "name-nul", "n-dims", "dim-negative", "size-overflow",
    "tensor-type", "block-multiple", "tensor-align", "overlap", "hole", "data-bounds",
    "byte-order", "utf8", "version", "nested-array",
}

TYPE_NAMES = {GGUFValueType.UINT8: "u8", GGUFValueType.INT8: "i8", GGUFValueType.UINT16: "u16",
              GGUFValueType.INT16: "i16", GGUFValueType.UINT32: "u32", GGUFValueType.INT32: "i32",
              GGUFValueType.FLOAT32: "f32", GGUFValueType.BOOL: "bool", GGUFValueType.STRING: "str",
              GGUFValueType.UINT64: "u64", GGUFValueType.INT64: "i64", GGUFValueType.FLOAT64: "f64"}


def number(v):
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
    return v


def text(part):
    """A string value as dnnblocks --json writes it: invalid UTF-8 replaced (values are not
    required to be UTF-8; keys and names are)."""
    return bytes(part).decode("utf-8", "replace")


def reference(path):
    """GGUFReader's view of the file, or the exception it raised."""
    try:
        r = GGUFReader(path)
        meta = []
        for name, field in r.fields.items():
            if name.startswith("GGUF."):
                continue
            main = field.types[0]
            if main == GGUFValueType.ARRAY:
                sub = field.types[-1] if len(field.types) > 1 else None
                count = int(field.parts[4][0]) if len(field.parts) > 4 else 0
                if sub is None:  # an empty array: GGUFReader keeps no element type
                    sub = GGUFValueType(int(field.parts[3][0]))
                if not count:
                    values = []
                elif sub == GGUFValueType.STRING:
                    values = [text(field.parts[i]) for i in field.data]
                else:
                    values = [number(v) for v in field.contents()]
                meta.append({"key": name, "type": f"arr[{TYPE_NAMES[sub]}]", "value": values[:1024]})
            else:
                value = text(field.parts[-1]) if main == GGUFValueType.STRING else number(field.contents())
                meta.append({"key": name, "type": TYPE_NAMES[main], "value": value})
        tensors = [{"name": t.name, "type_id": int(t.tensor_type), "dims": [int(d) for d in t.shape],
                    "offset": int(t.data_offset) - r.data_offset} for t in r.tensors]
        version = int(r.fields["GGUF.version"].parts[0][0])
        return {"version": version, "alignment": int(r.alignment), "data_offset": r.data_offset,
                "metadata": meta, "tensors": tensors}
    except Exception as e:  # every refusal: ValueError, KeyError, IndexError, UnicodeDecodeError...
        return ValueError(f"{type(e).__name__}: {e}")  # picklable across the worker


class Reference:
    """GGUFReader in a worker process, so that a file it never finishes reading (it loops over
    an array count from the file without checking it against the file's size) costs
    TIMEOUT seconds and counts as a refusal, instead of hanging the comparison."""
    TIMEOUT = 10

    def __init__(self):
        self.pool = multiprocessing.Pool(1)

    def __call__(self, path):
        job = self.pool.apply_async(reference, (path,))
        try:
            return job.get(self.TIMEOUT)
        except multiprocessing.TimeoutError:
            self.pool.terminate()
            self.pool = multiprocessing.Pool(1)
            return TimeoutError(f"GGUFReader did not finish in {self.TIMEOUT} s")


def ours(binary, path):
    run = subprocess.run([binary, "inspect", "--json", path], capture_output=True, text=True)
    if run.returncode == 0:
        return json.loads(run.stdout)
    if run.returncode != 2:
        return RuntimeError(f"exit {run.returncode}: {run.stderr.strip()}")
    msg = run.stderr.strip()
    rule = msg[msg.rfind("(rule: ") + 7:-1] if "(rule: " in msg else "?"
    return ValueError(rule)


def compare(binary, path, ref):
    """(None or a description of the difference, the category for the summary)."""
    a, b = ours(binary, path), ref(path)
    why = difference(a, b)
    if why is not None:
        return why, "differences"
    if isinstance(a, Exception) and isinstance(b, Exception):
        return None, "both refuse"
    return None, "explained" if isinstance(a, Exception) or isinstance(b, Exception) else "both accept"


def difference(a, b):
    """None when dnnblocks' view `a` and GGUFReader's `b` agree or differ in an explained way."""
    if isinstance(a, RuntimeError):
        return f"dnnblocks failed: {a}"
    if isinstance(a, Exception) and isinstance(b, Exception):
        return None
    if isinstance(a, Exception):
        rule = str(a)
        return None if rule in LAX_RULES else f"dnnblocks refuses (rule: {rule}), GGUFReader accepts"
    if isinstance(b, Exception):
        # numpy cannot shape a zero-element view whose other dims multiply past 2^63, which
        # ggml accepts (docs/gguf.md); dnnblocks then refuses only load().
        def huge_empty(t):
            product = 1
            for d in t["dims"]:
                product *= d or 1
            return t["numel"] == 0 and product >= 2**63
        if any(huge_empty(t) for t in a["tensors"]) and (
                "cannot reshape array of size 0" in str(b) or "array is too big" in str(b)):
            return None
        return f"dnnblocks accepts, GGUFReader refuses: {b}"
    # Without tensors ggml (and dnnblocks) have no padding and no data section; GGUFReader pads anyway.
    for key in ("version", "alignment", "data_offset") if a["tensors"] else ("version", "alignment"):
        if a[key] != b[key]:
            return f"{key}: dnnblocks {a[key]} vs GGUFReader {b[key]}"
    mine = [{"key": m["key"], "type": m["type"], "value": m["value"]} for m in a["metadata"]]
    if mine != b["metadata"]:
        for x, y in zip(mine, b["metadata"]):
            if x != y:
                return f"metadata differs: dnnblocks {x} vs GGUFReader {y}"
        return f"metadata count: {len(mine)} vs {len(b['metadata'])}"
    mine = [{"name": t["name"], "type_id": t["type_id"], "dims": t["dims"], "offset": t["data_offsets"][0]}
            for t in a["tensors"]]
    if mine != b["tensors"]:
        return f"tensors differ: dnnblocks {mine} vs GGUFReader {b['tensors']}"
    return None


def mutations(rng, files, count, out):
    """count files: a valid file with 1 to 4 random bytes changed, cut short, or grown."""
    paths = []
    for i in range(count):
        data = bytearray(open(rng.choice(files), "rb").read())
        kind = rng.random()
        if kind < 0.15 and data:
            data = data[:rng.randrange(len(data))]
        elif kind < 0.25:
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        else:
            for _ in range(rng.randint(1, 4)):
                # Most edits land in the header, where the rules are.
                at = rng.randrange(min(len(data), 512))
                data[at] = rng.choice([0, 1, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        path = os.path.join(out, f"mut{i}.gguf")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    extra = sys.argv[3:]
    corpus = sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".gguf"))
    valid = [f for f in corpus if os.path.basename(f).startswith("valid_")]
    files = list(corpus)
    for d in extra:
        files += sorted(os.path.join(d, f) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    rng = random.Random(28)
    ref = Reference()
    stats = {"both accept": 0, "both refuse": 0, "explained": 0, "differences": 0}
    with tempfile.TemporaryDirectory(prefix="dnnb-gguf-") as tmp:
        for path in files + mutations(rng, valid, count, tmp):
            why, category = compare(binary, path, ref)
            stats[category] += 1
            if why is not None:
                print(f"DIFF {os.path.basename(path)}: {why}")
    total = len(files) + count
    print(f"{total} files: {stats['both accept']} both accept, {stats['both refuse']} both refuse, "
          f"{stats['explained']} judged differently for a documented reason, "
          f"{stats['differences']} differences")
    return 1 if stats["differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
