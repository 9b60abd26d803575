#!/usr/bin/env python3
"""Differential check of `dnnblocks inspect` against the format's reference reader (the Rust
`safetensors` crate, through its Python package): every file must be accepted by both or
refused by both. Inputs: every corpus file; seeded random edits of the valid corpus headers
(bytes replaced, inserted or deleted; JSON tokens spliced in), with the header length
rewritten to match half of the time; and as many headers generated from the format's pieces
(every dtype and its forms, edge-case dimensions, offsets right or off by one, ignored fields
holding edge-case JSON, whitespace and non-whitespace padding).

One difference is deliberate (docs/safetensors.md): a tensor name or __metadata__ key written
twice is refused by dnnblocks (rules duplicate-name, duplicate-key) while the reference keeps
the last one; such cases are counted, not reported.

Usage: python3 tests/corpus/safetensors/compare_with_reference.py BUILD/bin/dnnblocks [COUNT [DIR...]]
(COUNT edits and COUNT generated headers, 2000 each by default; every file of each DIR too,
such as the corpus a fuzz_safetensors run leaves in its build tree.)
Needs the `safetensors` Python package. Exit status 1 when the readers disagree.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

from safetensors import deserialize

CORPUS = os.path.dirname(os.path.abspath(__file__))
TOKENS = [b" ", b"\t", b"\n", b"\r", b"\0", b"\xef\xbb\xbf", b"{", b"}", b"[", b"]", b",", b":",
          b'"', b"\\", b"\\u", b"\\ud800", b"\\udc00", b"null", b"true", b"-", b"0", b"-0", b"1e400",
          b"1e-400", b"1.5", b"18446744073709551615", b"18446744073709551616", b"F4", b"C64",
          b'"dtype"', b'"shape"', b'"data_offsets"', b'"__metadata__"', b'{"F32":null}',
          b'["F32",[1],[0,4]]', b"\x01", b"\x7f", b"\xc3\xa9", b"\xff"]


def reference_accepts(blob):
    try:
        deserialize(blob)
        return True
    except Exception:  # the package raises SafetensorError and, for bad JSON, others
        return False


def dnnblocks_verdict(binary, path):
    """(accepted, message): inspect exits 0 on an accepted file, 2 on a refused one."""
    run = subprocess.run([binary, "inspect", path], capture_output=True, text=True,
                         errors="replace")
    if run.returncode not in (0, 2):
        raise SystemExit(f"{path}: dnnblocks inspect exited {run.returncode}: {run.stderr}")
    return run.returncode == 0, run.stderr.strip()


def edit(blob, rng):
    """One random edit of the header, the data kept; the length is rewritten half the time."""
    n = struct.unpack("<Q", blob[:8])[0]
    header, data = bytearray(blob[8:8 + n]), blob[8 + n:]
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(header) + 1)
        kind = rng.randrange(4)
        if kind == 0 and header:
            del header[min(at, len(header) - 1)]
        elif kind == 1:
            header[at:at] = rng.choice(TOKENS)
        elif kind == 2 and header:
            end = min(len(header), at + rng.randint(1, 4))
            header[at:end] = rng.choice(TOKENS)
        else:
            header[at:at] = bytes([rng.randrange(256)])
    length = len(header) if rng.random() < 0.5 else n
    return struct.pack("<Q", length) + bytes(header) + data


DTYPES = {"BOOL": 8, "U8": 8, "I8": 8, "U16": 16, "I16": 16, "U32": 32, "I32": 32, "U64": 64,
          "I64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "F8_E4M3": 8, "F8_E5M2": 8,
          "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F16": 16, "BF16": 16, "F32": 32,
          "F64": 64, "C64": 64}
NUMBERS = ["0", "-0", "1", "-1", "1.0", "1e2", "1E+2", "01", ".5", "1.", "1e", "1e400", "-1e400",
           "1e-400", "0e999999999999", "1e308", "1.7976931348623157e308",
           "1.7976931348623158e308", "17976931348623157e292", "179769313486231570e291",
           "18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
           "0.000000000000000000000000000001e330", "9" * 310, "1" + "0" * 308 + ".5"]
SPACE = [" ", "\t", "\n", "\r", "\0", "\f", "\v", "\u00a0"]


def generated(rng):
    """A header built from the format's pieces, mostly well formed, with its data section."""
    def value(depth=0):
        pick = rng.randrange(7 if depth < 3 else 4)
        if pick == 0:
            return rng.choice(NUMBERS)
        if pick == 1:
            return rng.choice(['"x"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', '"\x01"',
                               '"\\q"', '"a\\/b"'])
        if pick == 2:
            return rng.choice(["null", "true", "false", "nul"])
        if pick == 3:
            return rng.choice(["[]", "{}", "[1,]", "{,}", "[" * 126 + "]" * 126,
                               "[" * 127 + "]" * 127])
        if pick == 4:
            return "[" + ",".join(value(depth + 1) for _ in range(rng.randrange(3))) + "]"
        return "{" + ",".join(f'"k{rng.randrange(2)}":{value(depth + 1)}'
                              for _ in range(rng.randrange(3))) + "}"

    members, offset = [], 0
    if rng.random() < 0.3:
        members.append('"__metadata__":' + rng.choice(
            ["null", "{}", '{"k":"v"}', '{"k":1}', '{"k":"v","k":"w"}', "[]", '"x"']))
    for t in range(rng.randrange(4)):
        name = rng.choice(list(DTYPES) + ["F12", "f32", "F8_E4M3FN"])
        dims = [rng.choice([0, 1, 2, 3, 4, 1 << 32, (1 << 64) - 1]) for _ in range(rng.randrange(4))]
        count = 1
        for d in dims:
            count *= d
        bits = count * DTYPES.get(name, 32)
        size = bits // 8 if bits < 8 * 4096 else 8  # huge shapes: a size that cannot match
        size += rng.choice([0] * 8 + [1, -1])
        begin = offset + rng.choice([0] * 8 + [1, -1])
        end = begin + size
        offset = max(offset, end)
        shape = "[" + ",".join(str(d) for d in dims) + "]"
        dtype = rng.choice([f'"{name}"'] * 6 + [f'{{"{name}":null}}', f'{{"{name}":{{}}}}'])
        offsets = f"[{begin},{end}]"
        if rng.random() < 0.2:
            members.append(f'"t{t}":[{dtype},{shape},{offsets}]')
            continue
        fields = [f'"dtype":{dtype}', f'"shape":{shape}', f'"data_offsets":{offsets}']
        if rng.random() < 0.4:
            fields.insert(rng.randrange(4), f'"extra":{value()}')
        if rng.random() < 0.05:
            fields.pop(rng.randrange(len(fields)))
        members.append(f'"t{t}":{{' + ",".join(fields) + "}")
    header = "{" + ",".join(members) + "}"
    if rng.random() < 0.3:
        header = rng.choice(SPACE) + header
    if rng.random() < 0.5:
        header += "".join(rng.choice(SPACE) for _ in range(rng.randrange(4)))
    raw = header.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw + bytes(max(0, offset + rng.choice([0] * 8 + [1, -1])))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary, edits = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    names = sorted(f for f in os.listdir(CORPUS) if f.endswith(".safetensors"))
    cases = [(name, open(os.path.join(CORPUS, name), "rb").read()) for name in names]
    for folder in sys.argv[3:]:  # e.g. a libFuzzer corpus: every file in it
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as f:
                cases.append((os.path.join(folder, name), f.read()))
    valid = [blob for name, blob in cases if name.startswith(("valid_", "torch_"))]
    rng = random.Random(1)
    cases += [(f"edit {i}", edit(rng.choice(valid), rng)) for i in range(edits)]
    cases += [(f"generated {i}", generated(rng)) for i in range(edits)]

    disagreements, deliberate, accepted = 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.safetensors")
        for label, blob in cases:
            with open(path, "wb") as f:
                f.write(blob)
            ours, message = dnnblocks_verdict(binary, path)
            theirs = reference_accepts(blob)
            if ours == theirs:
                accepted += ours
                continue
            if theirs and ("(rule: duplicate-name)" in message or
                           "(rule: duplicate-key)" in message and "__metadata__ has" in message):
                deliberate += 1
                continue
            disagreements += 1
            print(f"{label}: reference {'accepts' if theirs else 'refuses'}, dnnblocks "
                  f"{'accepts' if ours else 'refuses'} {message}\n  {blob[:200]!r}")
    print(f"{len(cases)} files ({accepted} accepted by both): {disagreements} disagreements, "
          f"{deliberate} duplicate names or metadata keys refused on purpose")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
