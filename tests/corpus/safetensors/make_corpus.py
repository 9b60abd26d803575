#!/usr/bin/env python3
"""Remake the safetensors test corpus: valid files (valid_*.safetensors, torch_*.safetensors)
and malformed files, each breaking one reader rule and named after it. Standard library only;
torch_save_file.safetensors is (re)made only when torch and safetensors are importable, so the
committed copy stays when they are not.

Usage: python3 tests/corpus/safetensors/make_corpus.py [OUTPUT_DIR]
tests/test_safetensors.cpp holds the expected rule of each malformed file and the values of
each valid one: change both together.
"""
import json
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def header_bytes(header_text):
    """Header text padded with spaces to a multiple of 8, as the reference writer pads it."""
    raw = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return raw


def container(header_text, data=b""):
    raw = header_bytes(header_text)
    return struct.pack("<Q", len(raw)) + raw + data


def tensors_file(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, data bytes), laid out in list order."""
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        data += blob
        offset += len(blob)
    return container(json.dumps(header, separators=(",", ":")), data)


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def bf16_of(*values):
    # Exact only for values whose f32 form has 16 zero low bits (all used below).
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, v
        out += struct.pack("<H", bits >> 16)
    return out


def write(name, blob):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def make_valid():
    write("valid_f32_i64.safetensors", tensors_file(
        [("weight", "F32", [2, 3], f32(0.0, 1.5, -2.0, 3.25, -0.125, 100.0)),
         ("index", "I64", [3], struct.pack("<3q", -1, 0, 1 << 40))],
        metadata={"format": "pt", "config": json.dumps({"hidden": 64, "names": ["a", "b"]})}))

    # Low-precision formats; the F16 tensor lands at an odd byte offset on purpose (readers
    # must not assume alignment).
    write("valid_low_precision.safetensors", tensors_file([
        ("bf16", "BF16", [2, 2], bf16_of(1.0, -2.5, 0.15625, float("inf"))),
        # e4m3fn: 1.0, -2.0, 0.5, 448 (max), NaN, 2^-9 (smallest subnormal)
        ("e4m3", "F8_E4M3", [6], bytes([0x38, 0xC0, 0x30, 0x7E, 0x7F, 0x01])),
        # e5m2: 1.0, -2.0, 57344 (max), +Inf, 2^-16 (smallest subnormal)
        ("e5m2", "F8_E5M2", [5], bytes([0x3C, 0xC0, 0x7B, 0x7C, 0x01])),
        ("f16", "F16", [2], struct.pack("<2H", 0x3C00, 0xC100)),  # 1.0, -2.5
    ]))

    write("valid_scalar_and_empty.safetensors", tensors_file([
        ("scalar", "F32", [], f32(42.5)),
        ("empty", "F32", [0, 4], b""),
        ("empty_cols", "I32", [3, 0], b""),
        ("flags", "BOOL", [2], bytes([1, 0])),
        ("bytes", "U8", [3], bytes([0, 127, 255])),
        ("small", "I8", [2], struct.pack("<2b", -128, 127)),
        ("ints", "I32", [2], struct.pack("<2i", -7, 2147483647)),
        ("double", "F64", [1], struct.pack("<d", 0.1)),
    ]))

    # Unknown fields in a tensor entry are ignored, as the reference reader ignores them.
    write("valid_extra_field.safetensors", container(
        '{"a":{"note":"x","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', f32(1.0, 2.0)))
    write("valid_no_tensors.safetensors", container('{"__metadata__":{"note":"no tensors"}}'))


def make_malformed():
    ok_entry = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    eight = f32(1.0, 2.0)

    write("too_short.safetensors", b"\x05\x00\x00\x00\x00")                       # file-size
    write("header_too_long.safetensors",                                            # header-length
          struct.pack("<Q", 9_000_000_000_000) + b'{"a":1}')
    write("header_past_end.safetensors", struct.pack("<Q", 64) + b'{"x":{}}  ')      # header-bounds
    write("bad_utf8.safetensors", container(                                         # header-utf8
        b'{"caf\xe9":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', eight))
    write("bad_json.safetensors", container('{"a":{"dtype":"F32","shape":[2],', eight))  # header-json
    write("header_not_object.safetensors", container("[1,2]"))                       # header-object
    write("deep_nesting.safetensors",                                                # header-depth
          container('{"__metadata__":' + "[" * 20 + "]" * 20 + "}"))
    # The two entries are identical: a reader that keeps one silently sees a valid file.
    write("duplicate_name.safetensors", container(                                   # duplicate-name
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', eight))
    write("duplicate_field.safetensors", container(                                  # duplicate-key
        '{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', eight))
    write("metadata_not_string.safetensors", container(json.dumps(                   # metadata
        {"__metadata__": {"step": 3}, "a": ok_entry}), eight))
    write("metadata_not_object.safetensors", container(json.dumps(                   # metadata
        {"__metadata__": ["x"], "a": ok_entry}), eight))
    write("tensor_not_object.safetensors", container('{"a":[0,8]}'))                 # tensor-entry
    write("unknown_dtype.safetensors", container(json.dumps(                         # dtype
        {"a": dict(ok_entry, dtype="F12")}), eight))
    write("lowercase_dtype.safetensors", container(json.dumps(                       # dtype
        {"a": dict(ok_entry, dtype="f32")}), eight))
    write("negative_shape.safetensors", container(json.dumps(                        # shape
        {"a": dict(ok_entry, shape=[-2])}), eight))
    write("float_shape.safetensors", container(                                      # shape
        '{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', eight))
    write("reversed_offsets.safetensors", container(json.dumps(                      # data-offsets
        {"a": dict(ok_entry, shape=[0], data_offsets=[8, 0])}), eight))
    write("offsets_wrong_length.safetensors", container(json.dumps(                  # data-offsets
        {"a": dict(ok_entry, data_offsets=[0, 4, 8])}), eight))
    write("shape_size_mismatch.safetensors", container(json.dumps(                   # shape-size
        {"a": dict(ok_entry, shape=[3])}), eight))
    # 2^32 * 2^32 * 2^32 elements overflow int64 before the byte count is even formed.
    write("size_overflow.safetensors", container(json.dumps(                         # size-overflow
        {"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 1 << 32], "data_offsets": [0, 0]}})))
    # 2^61 F64 elements fit in int64, their 2^64 bytes do not fit in uint64.
    write("size_overflow_bytes.safetensors", container(json.dumps(                   # size-overflow
        {"a": {"dtype": "F64", "shape": [1 << 61], "data_offsets": [0, 0]}})))
    # A consistent claim of 2^63 bytes on a tiny file: must be refused, never allocated.
    write("offset_past_end.safetensors", container(json.dumps(                       # data-bounds
        {"a": {"dtype": "F32", "shape": [1 << 61], "data_offsets": [0, 1 << 63]}}), eight))
    two = {"a": ok_entry, "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}
    write("truncated_data.safetensors",                                              # data-bounds
          container(json.dumps(two), f32(1.0, 2.0, 3.0, 4.0))[:-4])
    write("overlap.safetensors", container(json.dumps(                               # overlap
        {"a": ok_entry, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}),
        f32(1.0, 2.0, 3.0)))
    write("hole.safetensors", container(json.dumps(                                  # hole
        {"a": dict(ok_entry, shape=[1], data_offsets=[0, 4]),
         "b": dict(ok_entry, shape=[1], data_offsets=[8, 12])}), f32(1.0, 2.0, 3.0)))
    write("hole_at_start.safetensors", container(json.dumps(                         # hole
        {"a": dict(ok_entry, shape=[1], data_offsets=[4, 8])}), eight))
    write("trailing_bytes.safetensors", container(json.dumps({"a": ok_entry}),       # trailing-bytes
                                                  eight + b"\x00\x00\x00\x00"))


def make_torch():
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError:
        print("torch or safetensors not importable: keeping torch_save_file.safetensors as is")
        return
    tensors = {
        "weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4 - 0.5,
        "bias": torch.tensor([1.0, -2.0, 0.5], dtype=torch.bfloat16),
        "scale": torch.tensor([1.0, -2.0, 448.0], dtype=torch.float8_e4m3fn),
        "steps": torch.tensor([1, -1, 1 << 40], dtype=torch.int64),
    }
    path = os.path.join(OUT, "torch_save_file.safetensors")
    save_file(tensors, path, metadata={"producer": "torch", "config": json.dumps({"dim": 3})})
    os.chmod(path, 0o644)


if __name__ == "__main__":
    make_valid()
    make_malformed()
    make_torch()
