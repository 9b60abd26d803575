#!/usr/bin/env python3
"""Remake the safetensors test corpus: valid files (valid_*.safetensors, torch_*.safetensors)
and malformed files, each breaking one reader rule and named after it. Standard library only;
the torch_*.safetensors files are (re)made only when torch and safetensors are importable, so
the committed copies stay when they are not.

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

    # Every dtype the format defines, with values whose decoding tests/test_safetensors.cpp
    # checks. Sub-byte dtypes: F4 packs element 2k in the low nibble of byte k (torch's
    # float4_e2m1fn_x2); F6 holds 4 elements in 3 bytes.
    write("valid_all_dtypes.safetensors", tensors_file([
        ("bool", "BOOL", [2], bytes([1, 0])),
        ("u8", "U8", [2], bytes([0, 255])),
        ("i8", "I8", [2], struct.pack("<2b", -128, 127)),
        ("u16", "U16", [2], struct.pack("<2H", 0, 65535)),
        ("i16", "I16", [2], struct.pack("<2h", -32768, 32767)),
        ("u32", "U32", [2], struct.pack("<2I", 0, 4294967295)),
        ("i32", "I32", [2], struct.pack("<2i", -7, 2147483647)),
        ("u64", "U64", [2], struct.pack("<2Q", 0, 1 << 53)),
        ("i64", "I64", [2], struct.pack("<2q", -(1 << 40), 1 << 40)),
        # E2M1 codes 1, 7, 9, 15, 2, 12, 0, 8: 0.5, 6, -0.5, -6, 1, -2, 0, -0
        ("f4", "F4", [2, 4], bytes([0x71, 0xF9, 0xC2, 0x80])),
        ("f6_e2m3", "F6_E2M3", [4], bytes([0x12, 0x34, 0x56])),
        ("f6_e3m2", "F6_E3M2", [4], bytes([0x65, 0x43, 0x21])),
        ("f8_e4m3", "F8_E4M3", [2], bytes([0x38, 0xFF])),           # 1, NaN
        ("f8_e5m2", "F8_E5M2", [2], bytes([0x3C, 0x7C])),           # 1, +Inf
        ("f8_e8m0", "F8_E8M0", [4], bytes([127, 0, 254, 255])),     # 1, 2^-127, 2^127, NaN
        ("f8_e4m3fnuz", "F8_E4M3FNUZ", [4], bytes([0x40, 0x80, 0x01, 0x7F])),  # 1, NaN, 2^-10, 240
        ("f8_e5m2fnuz", "F8_E5M2FNUZ", [4], bytes([0x40, 0x80, 0x01, 0x7F])),  # 1, NaN, 2^-17, 57344
        ("f16", "F16", [2], struct.pack("<2H", 0x3C00, 0xC100)),    # 1, -2.5
        ("bf16", "BF16", [2], struct.pack("<2H", 0x3F80, 0xC020)),  # 1, -2.5
        ("f32", "F32", [2], f32(1.5, -2.0)),
        ("f64", "F64", [1], struct.pack("<d", 0.1)),
        ("c64", "C64", [2], f32(1.0, -2.0, 0.5, 3.0)),              # 1-2i, 0.5+3i
    ]))

    # Forms the reference reader (serde_json and serde's derived readers) accepts though no
    # writer makes them: leading whitespace and tab/CR/LF padding, a tensor as the array
    # [dtype, shape, data_offsets], a dtype as {NAME: null}, "__metadata__": null, ignored
    # fields holding escapes, a surrogate pair, a repeated key, a number that underflows to
    # 0 and arrays nested to serde_json's limit of 127 levels (top object, tensor object,
    # then 125 arrays).
    nested = "[" * 125 + "]" * 125
    header = ('\n\t {"__metadata__":null,'
              '"array_form":["F16",[2],[0,4]],'
              '"enum_form":{"dtype":{"I8":null},"shape":[1],"data_offsets":[4,5]},'
              '"extras":{"x":"\\u00e9\\ud83d\\ude00\\n","x":1e-400,"deep":' + nested + ','
              '"dtype":"U8","shape":[],"data_offsets":[5,6]}}\r\n\t ')
    write("valid_serde_forms.safetensors", container(
        header, struct.pack("<2H", 0x3C00, 0xC000) + bytes([0xFE, 7])))

    # Shapes at the edge of the size rules: zero-element tensors sharing an offset with the
    # next tensor; a dimension of 2^64 - 1, and dimensions whose product exceeds 2^63 but not
    # 2^64, legal because the 0 after them makes the product 0 without overflow.
    write("valid_edge_shapes.safetensors", container(
        '{"empty_a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},'
        '"empty_b":{"dtype":"F64","shape":[18446744073709551615,0],"data_offsets":[0,0]},'
        '"empty_c":{"dtype":"I8","shape":[4294967296,4294967295,0],"data_offsets":[0,0]},'
        '"empty_d":{"dtype":"F32","shape":[1099511627776,0,1099511627776,1099511627776],"data_offsets":[0,0]},'
        '"one":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"empty_end":{"dtype":"C64","shape":[3,0],"data_offsets":[4,4]}}', f32(2.5)))


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
    # One array more than valid_serde_forms: 128 levels, past serde_json's limit.
    write("deep_nesting.safetensors", container(                                     # header-depth
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"deep":'
        + "[" * 126 + "]" * 126 + "}}", eight))
    # Defects the reference reader refuses that a lenient JSON parser accepts.
    write("bom_before_header.safetensors",                                           # header-bom
          container(b"\xef\xbb\xbf" + json.dumps({"a": ok_entry}).encode(), eight))
    # NUL bytes (not spaces) padding the header to a multiple of 8 after the JSON object.
    nul_header = json.dumps({"a": ok_entry}, separators=(",", ":")).encode()
    nul_header += b"\0" * (8 - len(nul_header) % 8)
    write("nul_padded_header.safetensors",                                           # header-padding
          struct.pack("<Q", len(nul_header)) + nul_header + eight)
    write("lone_surrogate.safetensors", container(                                   # header-json
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":"\\ud800"}}', eight))
    # An ignored field still has to be a double serde_json can hold.
    write("number_out_of_range.safetensors", container(                              # header-json
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1e400}}', eight))
    write("duplicate_metadata.safetensors", container(                               # duplicate-key
        '{"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[2],'
        '"data_offsets":[0,8]}}', eight))
    write("tensor_short_array.safetensors", container('{"a":["F32",[2]]}', eight))   # tensor-entry
    write("dtype_map_two_keys.safetensors", container(                               # dtype
        '{"a":{"dtype":{"F32":null,"F16":null},"shape":[2],"data_offsets":[0,8]}}', eight))
    # 3 F4 elements are 12 bits: not a whole number of bytes.
    write("f4_odd_count.safetensors", container(json.dumps(                          # sub-byte
        {"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}), b"\0\0"))
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
    write("tensor_not_object.safetensors", container('{"a":8}'))                     # tensor-entry
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
    # 2^32 * 2^32 * 2^32 elements overflow 64 bits before the size is even formed.
    write("size_overflow.safetensors", container(json.dumps(                         # size-overflow
        {"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 1 << 32], "data_offsets": [0, 0]}})))
    # 2^61 F64 elements fit in 64 bits, their 2^67 bits do not.
    write("size_overflow_bytes.safetensors", container(json.dumps(                   # size-overflow
        {"a": {"dtype": "F64", "shape": [1 << 61], "data_offsets": [0, 0]}})))
    # 2^32 * 2^32 overflows 64 bits before the trailing 0 is reached: refused, as the
    # reference multiplies left to right with overflow checks.
    write("size_overflow_before_zero.safetensors", container(json.dumps(             # size-overflow
        {"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 0], "data_offsets": [0, 0]}})))
    # A consistent claim of 2^60 bytes on a tiny file: must be refused, never allocated.
    write("offset_past_end.safetensors", container(json.dumps(                       # data-bounds
        {"a": {"dtype": "F32", "shape": [1 << 58], "data_offsets": [0, 1 << 60]}}), eight))
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


def make_torch_dtypes():
    """The dtypes the suite does not compute in, as the reference writer stores them (no
    metadata, so the bytes are the same on every run)."""
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError:
        print("torch or safetensors not importable: keeping torch_file_dtypes.safetensors as is")
        return
    to = lambda values, dtype: torch.tensor(values, dtype=torch.float32).to(dtype)
    tensors = {
        "u16": torch.tensor([0, 65535], dtype=torch.uint16),
        "u32": torch.tensor([0, 4294967295], dtype=torch.uint32),
        "u64": torch.tensor([0, 1 << 53], dtype=torch.uint64),
        "i16": torch.tensor([-32768, 32767], dtype=torch.int16),
        "c64": torch.tensor([1 - 2j, 0.5 + 3j], dtype=torch.complex64),
        "e8m0": to([1.0, 2.0 ** -127, 2.0 ** 127], torch.float8_e8m0fnu),
        "e4m3fnuz": to([1.0, 240.0, 2.0 ** -10], torch.float8_e4m3fnuz),
        "e5m2fnuz": to([1.0, 57344.0, 2.0 ** -17], torch.float8_e5m2fnuz),
        # Two bytes of float4_e2m1fn_x2 are four F4 elements: 0.5, 6, -0.5, -6.
        "fp4": torch.tensor([0x71, 0xF9], dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
    }
    path = os.path.join(OUT, "torch_file_dtypes.safetensors")
    save_file(tensors, path)
    os.chmod(path, 0o644)


if __name__ == "__main__":
    make_valid()
    make_malformed()
    make_torch()
    make_torch_dtypes()
