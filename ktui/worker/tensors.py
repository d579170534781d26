"""Tensors crossing process boundaries: flatten nested outputs, save and load raw bytes, hash, poison.

Outputs go from the candidate worker to the judge as raw files (``<case>/<leaf>.bin`` plus a JSON description):
no pickle, so nothing the candidate returns can run code in the judge.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from ktui.protocol import OutputLeaf

# A NaN bit pattern that arithmetic does not produce (it produces the canonical quiet NaN), used to fill output
# buffers before a call: an element still holding it afterwards was never written. One pattern per float width.
POISON_BITS = {2: 0xFFF1, 4: 0xFFF1_F1F1, 8: 0xFFF1_F1F1_F1F1_F1F1}
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# Integer outputs are filled with this byte: 0x5A5A... is an unlikely result of integer arithmetic.
INT_POISON_BYTE = 0x5A


def flatten(obj: Any, prefix: str = "out") -> list[tuple[str, Any]]:
    """``[(path, leaf)]`` for nested tuples, lists and dicts: ``out``, ``out[0]``, ``out['key']``. Leaves are tensors,
    numbers or anything else (which the judge rejects)."""
    if isinstance(obj, (tuple, list)):
        return [p for i, v in enumerate(obj) for p in flatten(v, f"{prefix}[{i}]")]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in flatten(v, f"{prefix}[{k!r}]")]
    return [(prefix, obj)]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``bfloat16``."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """Raises ValueError for a name that is not a torch dtype."""
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return dt


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The tensor's elements in row-major order as raw bytes (any dtype, any device, any strides)."""
    t = t.detach().contiguous().cpu()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_from_bytes(data: bytes, dtype: str, shape: list[int]) -> torch.Tensor:
    """The inverse of ``tensor_bytes``: a CPU tensor."""
    dt = dtype_from_name(dtype)
    if not data:
        return torch.empty(shape, dtype=dt)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dt).reshape(shape)


def hash_data(data: Any) -> str:
    """A BLAKE2b digest (16 hex chars) of every tensor's dtype, shape and bytes and every scalar in ``data``: two
    processes that generated the same inputs agree on it, and an input written by a kernel changes it."""
    h = hashlib.blake2b(digest_size=8)
    for path, leaf in flatten(data, "in"):
        h.update(path.encode())
        if isinstance(leaf, torch.Tensor):
            h.update(f"{dtype_name(leaf.dtype)}{tuple(leaf.shape)}".encode())
            h.update(tensor_bytes(leaf))
        else:
            h.update(repr(leaf).encode())
    return h.hexdigest()


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill ``t`` in place with the poison pattern (NaN with a payload for floats, 0x5A bytes for integers)."""
    if t.dtype.is_floating_point and t.element_size() in POISON_BITS:
        bits = POISON_BITS[t.element_size()]
        iv = _INT_VIEW[t.element_size()]
        signed = bits - (1 << (8 * t.element_size())) if bits >= 1 << (8 * t.element_size() - 1) else bits
        t.view(iv).fill_(signed)
    elif t.dtype.is_floating_point:  # float8: any NaN encoding; e4m3fn has only 0x7F / 0xFF
        t.fill_(float("nan"))
    elif t.dtype != torch.bool:
        t.fill_(_int_pattern(t.element_size()))
    return t


def decoy_(t: torch.Tensor, seed: int) -> torch.Tensor:
    """Fill ``t`` in place with values that look like ordinary data (floats ~ N(0, 1), small integers), drawn from
    ``seed``: stale memory as a kernel would see it outside ktui. Cases filled this way show a kernel that behaves
    differently when it finds ktui's poison pattern (cases.md: right only while watched); an element it leaves
    unwritten keeps a wrong value and fails the comparison."""
    if t.numel() == 0 or t.is_meta or t.layout != torch.strided:
        return t
    g = torch.Generator(device=t.device).manual_seed(seed)
    if t.dtype.is_floating_point and t.element_size() >= 2:
        t.normal_(0.0, 1.0, generator=g)
    elif t.dtype.is_floating_point:  # float8: no in-place normal_
        t.copy_(torch.randn(t.shape, generator=g, device=t.device).to(t.dtype))
    elif t.dtype == torch.bool:
        t.random_(0, 2, generator=g)
    elif not t.is_complex():
        t.random_(0, 100, generator=g)
    return t


def _int_pattern(size: int) -> int:
    return int.from_bytes(bytes([INT_POISON_BYTE]) * size, "little", signed=True)


def poisoned_mask(t: torch.Tensor) -> torch.Tensor:
    """Elements of ``t`` (a contiguous CPU tensor) that still hold the poison pattern: never written."""
    size = t.element_size()
    if t.dtype.is_floating_point and size in POISON_BITS:
        bits = POISON_BITS[size]
        signed = bits - (1 << (8 * size)) if bits >= 1 << (8 * size - 1) else bits
        return t.contiguous().view(_INT_VIEW[size]) == signed
    if not t.dtype.is_floating_point and size in _INT_VIEW and t.dtype != torch.bool:
        return t.contiguous().view(_INT_VIEW[size]) == _int_pattern(size)
    return torch.zeros(t.shape, dtype=torch.bool)


def save_outputs(out: Any, folder: Path) -> list[OutputLeaf]:
    """Write every leaf of ``out`` under ``folder``; return their descriptions (path, kind, dtype, shape, stride,
    device, file). Non-tensor leaves are described by ``repr`` and ``value`` when they are numbers."""
    folder.mkdir(parents=True, exist_ok=True)
    leaves: list[OutputLeaf] = []
    for i, (path, leaf) in enumerate(flatten(out)):
        if isinstance(leaf, torch.Tensor) and (leaf.is_meta or leaf.layout != torch.strided):
            what = "meta tensor (no data)" if leaf.is_meta else f"tensor with layout {leaf.layout}"
            leaves.append({"path": path, "kind": "other", "type": what, "repr": ""})
        elif isinstance(leaf, torch.Tensor):
            f = folder / f"{i}.bin"
            f.write_bytes(tensor_bytes(leaf))
            leaves.append(
                {
                    "path": path,
                    "kind": "tensor",
                    "dtype": dtype_name(leaf.dtype),
                    "shape": list(leaf.shape),
                    "stride": list(leaf.stride()),
                    "device": str(leaf.device),
                    "file": f.name,
                    "class": f"{type(leaf).__module__}.{type(leaf).__qualname__}",
                }
            )
        elif isinstance(leaf, (int, float, bool)):
            leaves.append({"path": path, "kind": "number", "value": leaf, "type": type(leaf).__name__})
        else:
            leaves.append({"path": path, "kind": "other", "type": type(leaf).__name__, "repr": repr(leaf)[:200]})
    return leaves


def load_output(folder: Path, leaf: OutputLeaf) -> torch.Tensor:
    """The tensor a ``save_outputs`` leaf describes, read back from its file under ``folder``."""
    return tensor_from_bytes((folder / leaf["file"]).read_bytes(), leaf["dtype"], leaf["shape"])


def describe(obj: Any) -> list[OutputLeaf]:
    """The leaves of ``obj`` as (path, kind, dtype, shape): what the judge expects the candidate to return."""
    out: list[OutputLeaf] = []
    for path, leaf in flatten(obj):
        if isinstance(leaf, torch.Tensor):
            out.append({"path": path, "kind": "tensor", "dtype": dtype_name(leaf.dtype), "shape": list(leaf.shape)})
        else:
            out.append(
                {
                    "path": path,
                    "kind": "number" if isinstance(leaf, (int, float)) else "other",
                    "type": type(leaf).__name__,
                }
            )
    return out
