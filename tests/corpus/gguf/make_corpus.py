#!/usr/bin/env python3
"""Remake the hand-made part of the GGUF test corpus: malformed files, each breaking one reader
rule and named after what it breaks, and valid files that GGUFWriter cannot write (version 2,
an empty array, zero-element and scalar tensors, bytes after the data). Standard library only.
The files GGUFWriter writes (valid_types.gguf, ...) come from suites/fixtures/gen/gguf_files.py.

Usage: python3 tests/corpus/gguf/make_corpus.py [OUTPUT_DIR]
Also writes rules.json (malformed file -> the rule its error must name), which
tests/test_gguf.cpp reads.
"""
import json
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
T_F32, T_F16, T_Q4_0, T_Q8_0, T_F64 = 0, 1, 2, 8, 28


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def string(text):
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return u64(len(raw)) + raw


def kv(key, vtype, payload):
    return string(key) + u32(vtype) + payload


def kv_str(key, value):
    return kv(key, STR, string(value))


def kv_array(key, element_type, count, payload):
    return kv(key, ARR, u32(element_type) + u64(count) + payload)


def info(name, dims, ggml_type, offset):
    return string(name) + u32(len(dims)) + b"".join(u64(d) for d in dims) + u32(ggml_type) + u64(offset)


def gguf(kvs=(), infos=(), data=b"", version=3, magic=b"GGUF", n_tensors=None, n_kv=None,
         alignment=32):
    head = (magic + u32(version) + u64(len(infos) if n_tensors is None else n_tensors) +
            u64(len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + b"".join(infos))
    if infos:
        head += b"\0" * (-len(head) % alignment)
    return head + data


def f32s(*values):
    return struct.pack("<%df" % len(values), *values)


NAME = kv_str("general.name", "corpus")
ONE = info("w", [4], T_F32, 0)        # a 16-byte f32 tensor at data offset 0
ONE_DATA = f32s(1, 2, 3, 4) + b"\0" * 16  # padded to 32 bytes
TWO = [info("a", [4], T_F32, 0), info("b", [4], T_F32, 32)]
TWO_DATA = f32s(1, 2, 3, 4) + b"\0" * 16 + f32s(5, 6, 7, 8) + b"\0" * 16


def valid_base():
    return gguf([NAME], [ONE], ONE_DATA)


# file -> (bytes, rule). The rule is what tests/test_gguf.cpp expects in the error.
RULES = {
    "empty.gguf": (b"", "truncated"),
    "truncated_header.gguf": (valid_base()[:10], "truncated"),
    "bad_magic.gguf": (b"GGUG" + valid_base()[4:], "magic"),
    "version_0.gguf": (gguf([NAME], [ONE], ONE_DATA, version=0), "version"),
    "version_1.gguf": (gguf([NAME], [ONE], ONE_DATA, version=1), "version"),
    "version_4.gguf": (gguf([NAME], [ONE], ONE_DATA, version=4), "version"),
    "big_endian.gguf": (gguf([NAME], [ONE], ONE_DATA, version=0x03000000), "byte-order"),
    "tensor_count_negative.gguf": (gguf([NAME], [ONE], ONE_DATA, n_tensors=1 << 63), "count"),
    "kv_count_negative.gguf": (gguf([NAME], [ONE], ONE_DATA, n_kv=(1 << 64) - 1), "count"),
    "tensor_count_past_eof.gguf": (gguf([NAME], [ONE], ONE_DATA, n_tensors=1 << 40), "count-past-eof"),
    "kv_count_past_eof.gguf": (gguf([NAME], [ONE], ONE_DATA, n_kv=1 << 40), "count-past-eof"),
    "key_length_past_eof.gguf": (gguf([u64(1000) + b"general.name"], n_kv=1), "truncated"),
    "key_length_huge.gguf": (gguf([u64(1 << 62) + b"k" * 16], n_kv=1), "string-length"),
    "string_value_past_eof.gguf": (gguf([kv("general.name", STR, u64(500) + b"abc")]), "truncated"),
    "string_value_huge.gguf": (gguf([kv("general.name", STR, u64((1 << 30) + 1) + b"abc")]), "string-length"),
    "empty_key.gguf": (gguf([kv_str("", "x")]), "empty-key"),
    "key_bad_utf8.gguf": (gguf([kv_str(b"general.\xff", "x")]), "utf8"),
    "key_overlong_utf8.gguf": (gguf([kv_str(b"k\xc0\xaf", "x")]), "utf8"),
    "duplicate_key.gguf": (gguf([NAME, kv_str("general.name", "again")]), "duplicate-key"),
    "bad_value_type.gguf": (gguf([kv("k", 13, u32(0))]), "value-type"),
    "bad_value_type_huge.gguf": (gguf([kv("k", 0xFFFFFFFF, u32(0))]), "value-type"),
    "bad_array_element_type.gguf": (gguf([kv_array("k", 99, 1, u32(0))]), "value-type"),
    "nested_array.gguf": (gguf([kv_array("k", ARR, 1, u32(U8) + u64(1) + b"\x01")]), "nested-array"),
    "array_length_huge.gguf": (gguf([kv_array("k", U8, (1 << 30) + 1, b"\0" * 64)]), "array-length"),
    "array_past_eof.gguf": (gguf([kv_array("k", U32, 1000, u32(1) * 10)]), "truncated"),
    "array_bytes_overflow.gguf": (gguf([kv_array("k", U64, 1 << 30, b"\0" * 64)]), "truncated"),
    "string_array_past_eof.gguf": (gguf([kv_array("k", STR, 3, string("a") + string("b"))]), "truncated"),
    "string_array_element_huge.gguf": (gguf([kv_array("k", STR, 2, string("a") + u64(1 << 40) + b"x" * 8)]),
                                       "string-length"),
    "value_past_eof.gguf": (gguf([kv("k", U64, b"\0\0\0")]), "truncated"),
    "alignment_wrong_type.gguf": (gguf([kv("general.alignment", U64, u64(32))], [ONE], ONE_DATA),
                                  "alignment-type"),
    "alignment_array.gguf": (gguf([kv_array("general.alignment", U32, 1, u32(32))], [ONE], ONE_DATA),
                             "alignment-type"),
    "alignment_zero.gguf": (gguf([kv("general.alignment", U32, u32(0))]), "alignment-value"),
    "alignment_not_pow2.gguf": (gguf([kv("general.alignment", U32, u32(48))], [ONE], ONE_DATA, alignment=48),
                                "alignment-value"),
    "name_too_long.gguf": (gguf([NAME], [info("n" * 64, [4], T_F32, 0)], ONE_DATA), "name-length"),
    "name_nul.gguf": (gguf([NAME], [info(b"w\0x", [4], T_F32, 0)], ONE_DATA), "name-nul"),
    "name_bad_utf8.gguf": (gguf([NAME], [info(b"w\xed\xa0\x80", [4], T_F32, 0)], ONE_DATA), "utf8"),
    "name_length_past_eof.gguf": (gguf([NAME], [u64(100) + b"w"], n_tensors=1), "truncated"),
    "duplicate_tensor_name.gguf": (gguf([NAME], [info("a", [4], T_F32, 0), info("a", [4], T_F32, 32)],
                                        TWO_DATA), "duplicate-name"),
    "n_dims_5.gguf": (gguf([NAME], [info("w", [4, 1, 1, 1, 1], T_F32, 0)], ONE_DATA), "n-dims"),
    "n_dims_huge.gguf": (gguf([NAME], [string("w") + u32(0xFFFFFFFF) + u64(4)], n_tensors=1), "n-dims"),
    "dims_past_eof.gguf": (gguf([NAME], [string("w") + u32(4) + u64(4) + u64(1)], n_tensors=1), "truncated"),
    "dim_negative.gguf": (gguf([NAME], [info("w", [1 << 63], T_F32, 0)], ONE_DATA), "dim-negative"),
    "dims_product_overflow.gguf": (gguf([NAME], [info("w", [1 << 32, 1 << 32], T_F32, 0)], ONE_DATA),
                                   "size-overflow"),
    "dims_product_overflow_4d.gguf": (gguf([NAME], [info("w", [1 << 16] * 4, T_F32, 0)], ONE_DATA),
                                      "size-overflow"),
    "bytes_overflow.gguf": (gguf([NAME], [info("w", [1 << 61, 3], T_F64, 0)], ONE_DATA), "size-overflow"),
    "type_unknown.gguf": (gguf([NAME], [info("w", [4], 42, 0)], ONE_DATA), "tensor-type"),
    "type_huge.gguf": (gguf([NAME], [info("w", [4], 0xFFFFFFFF, 0)], ONE_DATA), "tensor-type"),
    "type_removed.gguf": (gguf([NAME], [info("w", [32], 4, 0)], ONE_DATA), "tensor-type"),
    "q8_0_row_not_blocks.gguf": (gguf([NAME], [info("w", [33, 2], T_Q8_0, 0)], b"\0" * 160), "block-multiple"),
    "q4_0_scalar.gguf": (gguf([NAME], [info("w", [], T_Q4_0, 0)], b"\0" * 32), "block-multiple"),
    "offset_unaligned.gguf": (gguf([NAME], [info("a", [4], T_F32, 0), info("b", [4], T_F32, 16)], TWO_DATA),
                              "tensor-align"),
    "offset_overlap.gguf": (gguf([NAME], [info("a", [4], T_F32, 0), info("b", [4], T_F32, 0)], TWO_DATA),
                            "overlap"),
    "offset_out_of_order.gguf": (gguf([NAME], [info("a", [4], T_F32, 32), info("b", [4], T_F32, 0)], TWO_DATA),
                                 "hole"),
    "offset_hole.gguf": (gguf([NAME], [info("a", [4], T_F32, 0), info("b", [4], T_F32, 64)],
                              TWO_DATA + b"\0" * 32), "hole"),
    "offset_huge.gguf": (gguf([NAME], [info("w", [4], T_F32, 1 << 63)], ONE_DATA), "hole"),
    "tensor_past_eof.gguf": (gguf([NAME], [info("w", [64], T_F32, 0)], ONE_DATA), "data-bounds"),
    "second_tensor_past_eof.gguf": (gguf([NAME], TWO, TWO_DATA[:40]), "data-bounds"),
    # The tensor infos end at byte 95: the file ends before the padding to 96.
    "padding_past_eof.gguf": (gguf([NAME], [info("w", [0], T_F32, 0)], alignment=1), "data-bounds"),
    "truncated_tensor_info.gguf": (gguf([NAME], [ONE], ONE_DATA)[:70], "truncated"),
}

# Valid files GGUFWriter does not write. file -> bytes; test_gguf.cpp checks their contents.
VALID = {
    "valid_v2.gguf": gguf([NAME], [ONE], ONE_DATA, version=2),
    "valid_empty_array.gguf": gguf([kv_array("k", U32, 0, b""), kv_array("s", STR, 0, b"")]),
    "valid_empty_string.gguf": gguf([kv_str("k", "")]),
    "valid_bool_nonzero.gguf": gguf([kv("b", BOOL, b"\x02")]),
    "valid_zero_element.gguf": gguf([NAME], [info("z", [32, 0], T_Q8_0, 0), info("zz", [0, 1 << 62, 1 << 62], T_F32, 0),
                                             info("w", [4], T_F32, 0)], ONE_DATA),
    "valid_scalar_tensor.gguf": gguf([NAME], [info("s", [], T_F32, 0)], f32s(2.5) + b"\0" * 28),
    "valid_trailing_bytes.gguf": gguf([NAME], [ONE], ONE_DATA + b"extra bytes"),
    "valid_unpadded_end.gguf": gguf([NAME], [ONE], f32s(1, 2, 3, 4)),
    "valid_no_kv.gguf": gguf([], [ONE], ONE_DATA),
    "valid_empty.gguf": gguf(),
}


def main():
    for name, (blob, _rule) in RULES.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
    for name, blob in VALID.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
    with open(os.path.join(OUT, "rules.json"), "w") as f:
        json.dump({name: rule for name, (_blob, rule) in RULES.items()}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(RULES)} malformed and {len(VALID)} valid files to {OUT}")


if __name__ == "__main__":
    main()
