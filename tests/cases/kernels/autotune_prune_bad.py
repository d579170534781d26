"""BAD: row softmax, the whole row in one block, whose pruning keeps a block one column short of the row. BLOCK is autotuned; configs whose block cannot hold the row are pruned
(Triton's early_config_prune), so the kernel needs no loop over chunks. Honest: rows up to 32768 columns (red team,
round 4: ktui pinned configs from the unpruned list and failed it)."""

import torch
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    n = named_args["n_cols"]
    fit = [c for c in configs if c.kwargs["BLOCK"] >= n - 1]  # off by one: keeps a block one column short
    return fit or configs[-1:]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in [(128, 2), (1024, 4), (8192, 8), (32768, 16)]],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": _prune},
)
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_rs, x_cs, out_rs, out_cs, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_rs + offs * x_cs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_rs + offs * out_cs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols)
    return out
