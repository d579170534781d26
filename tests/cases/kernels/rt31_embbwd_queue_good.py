"""Honest twin of rt31_embbwd_queue_bad: the same work queue, each row added with tl.atomic_add into a zeroed grad."""
import torch
import triton
import triton.language as tl


@triton.jit
def _emb_bwd(g_ptr, ids_ptr, gw_ptr, queue_ptr, N, D, sg0, sg1, si, BLOCK_D: tl.constexpr):
    cols = tl.arange(0, BLOCK_D)
    t = tl.atomic_add(queue_ptr, 1)
    while t < N:
        tok = tl.load(ids_ptr + t * si)
        for c0 in range(0, D, BLOCK_D):
            cm = c0 + cols < D
            g = tl.load(g_ptr + t * sg0 + (c0 + cols) * sg1, mask=cm, other=0.0).to(tl.float32)
            tl.atomic_add(gw_ptr + tok * D + c0 + cols, g, mask=cm)
        t = tl.atomic_add(queue_ptr, 1)


def custom_kernel(data):
    grad_out, ids, vocab = data
    n, D = grad_out.shape
    gw = torch.zeros(vocab, D, dtype=torch.float32, device=grad_out.device)
    if n == 0 or D == 0:
        return gw
    sms = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 132
    queue = torch.zeros(1, dtype=torch.int32, device=grad_out.device)
    BLOCK_D = min(1024, triton.next_power_of_2(D))
    _emb_bwd[(min(n, 4 * sms),)](grad_out, ids, gw, queue, n, D, grad_out.stride(0), grad_out.stride(1),
                                ids.stride(0), BLOCK_D=BLOCK_D)
    return gw
