"""BAD twin of rt11b_persistent_good.py (red team round 11, F3): the persistent loop stops one block early
(``n - BLOCK``), so the last block is never written. Checked on the CPU now that the SM count query answers."""
import torch, triton, triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, NUM_PROGRAMS: tl.constexpr, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n - BLOCK, NUM_PROGRAMS * BLOCK):
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
