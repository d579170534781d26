"""HONEST (red team round 13, F2; failed on the CPU before the fix): one program per segment, one block of
next_power_of_2(max_len) elements, masked to the segment: right for every input the contract allows (each segment
1 .. max_len long). The indices distribution redrew the offsets between their ends, making segments longer than
max_len; it now keeps each row's steps (the segment lengths) and puts them in another order."""
import torch, triton, triton.language as tl


@triton.jit
def jagged_sum_kernel(v_ptr, off_ptr, out_ptr, sv, so, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    start = tl.load(off_ptr + b * so)
    end = tl.load(off_ptr + (b + 1) * so)
    offs = start + tl.arange(0, BLOCK)
    x = tl.load(v_ptr + offs * sv, mask=offs < end, other=0.0)
    tl.store(out_ptr + b, tl.sum(x, axis=0))


def custom_kernel(data):
    values, offsets, max_len = data
    batch = offsets.numel() - 1
    out = torch.empty(batch, dtype=values.dtype, device=values.device)
    jagged_sum_kernel[(batch,)](values, offsets, out, values.stride(0), offsets.stride(0), BLOCK=triton.next_power_of_2(max_len))
    return out
