"""GOOD twin of late_input_write_bad: the same "cleanup" thread, zeroing a workspace of the kernel's own after the
call (the caller's tensors are left alone)."""

import threading
import time

import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, sxr, sxc, sor, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    tl.store(out_ptr + row * sor + offs, 2 * x + 1, mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    ws = torch.empty_like(out)
    k[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))

    def cleanup():
        time.sleep(0.2)
        ws.zero_()

    threading.Thread(target=cleanup, daemon=True).start()
    return out
