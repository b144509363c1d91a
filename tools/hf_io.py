"""Pure-Python readers/writers for Hugging Face checkpoint files (no `safetensors` or `transformers`).

What is here:
  - write_safetensors / read_safetensors: the safetensors format (8-byte little-endian header
    length, JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, raw data).
  - load_state_dict(dir): model.safetensors, else pytorch_model.bin, from an HF model folder.
  - write_config / read_config_json: config.json the way transformers writes it.
  - copy_tokenizer_files: vocab.json + merges.txt (+ tokenizer.json) from assets/.

Why pure Python: Debian 12 packages neither `safetensors` nor `transformers`, and our own C++
reader is tested against files produced here, so this writer must be small enough to audit.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
from typing import Dict, Optional

import torch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER_ASSETS = os.path.join(REPO_ROOT, "assets", "tokenizer", "roberta-base")

_DTYPE_TO_ST = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_ST_TO_DTYPE = {v: k for k, v in _DTYPE_TO_ST.items()}


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        # numpy has no bfloat16: reinterpret the same 2-byte words as int16.
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path: str, tensors: Dict[str, torch.Tensor],
                      metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes tensors sorted by name, header padded with spaces to a multiple of 8 bytes
    (as the reference Rust implementation does, so data starts 8-byte aligned)."""
    header: Dict[str, object] = {}
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"safetensors metadata must be str->str, got {k!r}: {type(v).__name__}")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if t.dtype not in _DTYPE_TO_ST:
            raise TypeError(f"{name}: dtype {t.dtype} has no safetensors name")
        data = _tensor_bytes(t)
        header[name] = {
            "dtype": _DTYPE_TO_ST[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path: str):
    """Returns (tensors: dict name -> torch.Tensor, metadata: dict or None)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file ({len(raw)} bytes)")
    (hlen,) = struct.unpack("<Q", raw[:8])
    if 8 + hlen > len(raw):
        raise ValueError(f"{path}: header length {hlen} exceeds file size {len(raw)}")
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    metadata = header.pop("__metadata__", None)
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        dtype = _ST_TO_DTYPE[info["dtype"]]
        b, e = info["data_offsets"]
        buf = bytearray(raw[base + b:base + e])  # own copy: tensors stay valid and writable
        shape = info["shape"]
        if e == b:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        if dtype == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buf, dtype=dtype)
        out[name] = t.reshape(shape)
    return out, metadata


def load_state_dict(model_dir: str) -> Dict[str, torch.Tensor]:
    """HF's preference order: model.safetensors, then pytorch_model.bin."""
    st = os.path.join(model_dir, "model.safetensors")
    pt = os.path.join(model_dir, "pytorch_model.bin")
    if os.path.exists(st):
        tensors, _ = read_safetensors(st)
        return tensors
    if os.path.exists(pt):
        return torch.load(pt, map_location="cpu")
    raise FileNotFoundError(f"{model_dir}: neither model.safetensors nor pytorch_model.bin")


def read_config_json(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        return json.load(f)


def write_config(path: str, config_dict: dict) -> None:
    # transformers' PretrainedConfig.to_json_string: indent 2, sorted keys, trailing newline.
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(config_dict, indent=2, sort_keys=True) + "\n")


def copy_tokenizer_files(out_dir: str, with_tokenizer_json: bool = False) -> None:
    names = ["vocab.json", "merges.txt"] + (["tokenizer.json"] if with_tokenizer_json else [])
    for n in names:
        shutil.copyfile(os.path.join(TOKENIZER_ASSETS, n), os.path.join(out_dir, n))


def save_torch_bin(path: str, state_dict: Dict[str, torch.Tensor]) -> None:
    """torch.save in the zip format (the default since torch 1.6), as HF's save_pretrained did
    before safetensors. Pass a module's state_dict() (an OrderedDict carrying `_metadata`) to
    get the exact pickle HF files have: OrderedDict + BUILD of `_metadata`."""
    # Saved under its final name because torch names the archive's root folder after the file
    # ("pytorch_model/data.pkl"), as HF checkpoints have it.
    torch.save(state_dict, path, _use_new_zipfile_serialization=True)
