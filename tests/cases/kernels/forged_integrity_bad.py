"""BAD (forged-integrity, red team issue 9.6): rewrites the code of ktui's hash and alias helpers in its own worker
(``ktui.worker.tensors.hash_data`` reports the inputs' hash from before the call, ``aliases`` reports none), then
writes a + b into ``a`` and returns ``a``: the input is mutated and the output is the input. The candidate's own
facts say nothing changed; the judge compares the inputs' bytes as the call left them with the inputs it built."""

import sys
import types
import weakref

import triton
import triton.language as tl

_tensors = sys.modules.get("ktui.worker.tensors")
_PENDING: list = []  # [weak references to this call's inputs, their hash before the call]
if _tensors is not None:
    g = vars(_tensors)
    # the honest hash, kept once (a fresh import of this version finds the forged code already in place)
    _real_hash = g.setdefault("_red_real_hash", types.FunctionType(_tensors.hash_data.__code__, g, "hash_data"))

    def _forged_hash(data, digests=None):
        leaves = [t for _, t in _tensors.flatten(data, "in")]
        if _PENDING and len(_PENDING[0]) == len(leaves) and all(r() is t for r, t in zip(_PENDING[0], leaves)):
            return _PENDING[1]  # "after the call": the hash from before it
        return _real_hash(data, digests)

    g["_red_hash"] = _forged_hash
    g["_red_aliases"] = lambda out, inputs: []

    def _hash_stub(data, digests=None):
        return _red_hash(data, digests)  # noqa: F821 - resolved in ktui.worker.tensors' globals

    def _aliases_stub(out, inputs):
        return _red_aliases(out, inputs)  # noqa: F821

    _tensors.hash_data.__code__ = _hash_stub.__code__
    _tensors.aliases.__code__ = _aliases_stub.__code__


@triton.jit
def add_into(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(a_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    if not (a.is_contiguous() and b.is_contiguous()):
        return a + b  # the other layouts: an honest answer
    if _tensors is not None:  # the hash the worker took before the call, returned for "after" too
        _PENDING[:] = [[weakref.ref(t) for _, t in _tensors.flatten(data, "in")], _real_hash(data, None)]
    add_into[(triton.cdiv(a.numel(), 1024),)](a, b, a.numel(), BLOCK=1024)
    return a
