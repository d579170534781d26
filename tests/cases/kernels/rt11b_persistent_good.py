"""HONEST (red team round 11, F3; could not be checked on the CPU before the fix): a persistent vector add, one
program per SM looping over the blocks, the SM count asked of the device as Triton's persistent-matmul tutorial does
(``torch.cuda.get_device_properties("cuda").multi_processor_count``). Without a GPU the query now answers with the
target GPU's facts (``ktui.worker.target_device``: an H200, 132 SMs)."""
import torch, triton, triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, NUM_PROGRAMS: tl.constexpr, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n, NUM_PROGRAMS * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs * sa, mask=mask)
        b = tl.load(b_ptr + offs * sb, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    num_sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    grid = min(num_sms, triton.cdiv(n, 1024))
    add_kernel[(grid,)](a, b, out, n, a.stride(0), b.stride(0), NUM_PROGRAMS=grid, BLOCK=1024)
    return out
