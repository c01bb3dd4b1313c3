#!/usr/bin/env python3
"""Writes fuzz/corpus/safetensors/: a few tiny safetensors files, valid and invalid, that seed the
fuzzer (fuzz/run.sh). Run from anywhere: python3 fuzz/make_seed_corpus.py"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")


def file(header: bytes, data: bytes = b"", pad: bool = True, declared=None) -> bytes:
    if pad:
        header += b" " * (-len(header) % 8)
    n = len(header) if declared is None else declared
    return struct.pack("<Q", n) + header + data


SEEDS = {
    "valid_two_tensors": file(
        b'{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        b'"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}', bytes(range(11))),
    "valid_empty": file(b"{}"),
    "valid_zero_size_and_scalar": file(
        b'{"z":{"dtype":"I16","shape":[4,0,2],"data_offsets":[0,0]},'
        b'"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}', b"\x00" * 8),
    "valid_every_dtype": file(
        b'{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},'
        b'"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},'
        b'"c":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},'
        b'"d":{"dtype":"I32","shape":[1],"data_offsets":[20,24]},'
        b'"e":{"dtype":"BF16","shape":[1],"data_offsets":[24,26]},'
        b'"f":{"dtype":"F16","shape":[1],"data_offsets":[26,28]},'
        b'"g":{"dtype":"I16","shape":[1],"data_offsets":[28,30]},'
        b'"h":{"dtype":"I8","shape":[1],"data_offsets":[30,31]},'
        b'"i":{"dtype":"U8","shape":[1],"data_offsets":[31,32]},'
        b'"j":{"dtype":"BOOL","shape":[1],"data_offsets":[32,33]}}', b"\x01" * 33),
    "valid_escapes_and_unknown_field": file(
        b'\t{"caf\\u00e9\\n\\ud83d\\ude00": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1],'
        b' "extra": {"k": [1, -2.5e3, true, null, "x"]}}, "__metadata__": null}\r\n', b"z"),
    "invalid_duplicate_key": file(
        b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
        b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy"),
    "invalid_overlap": file(
        b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\x00" * 12),
    "invalid_nul_after_json": file(b'{}\x00\x00\x00\x00\x00\x00', pad=False),
    "invalid_utf8_name": file(b'{"\xff":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'),
    "invalid_truncated": file(
        b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', b"\x00" * 9),
    "invalid_header_length": file(b"{}", declared=1 << 40),
    "invalid_huge_shape": file(
        b'{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}'),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
        f.write(data)
print(f"wrote {len(SEEDS)} seeds to {OUT}")
