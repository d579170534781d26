"""Wrong on a GPU (red team round 29, #3): an embedding backward adding each token's row into grad[id] with a plain
load and store per program: two tokens with one id race on a GPU (one add lost); the interpreter runs programs one at a
time, so the CPU run passes and warns (worker.interp_races)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _emb_bwd(g_ptr, ids_ptr, gw_ptr, D, sg0, sg1, si, BLOCK_D: tl.constexpr):
    t = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < D
    tok = tl.load(ids_ptr + t * si)
    g = tl.load(g_ptr + t * sg0 + cols * sg1, mask=cm, other=0.0).to(tl.float32)
    # BUG: a plain read-modify-write, not atomic: programs of tokens with the same id race on the GPU
    acc = tl.load(gw_ptr + tok * D + cols, mask=cm, other=0.0)
    tl.store(gw_ptr + tok * D + cols, acc + g, mask=cm)


def custom_kernel(data):
    grad_out, ids, vocab = data
    n, D = grad_out.shape
    gw = torch.zeros(vocab, D, dtype=torch.float32, device=grad_out.device)
    if n == 0 or D == 0:
        return gw
    BLOCK_D = min(1024, triton.next_power_of_2(D))
    _emb_bwd[(n, triton.cdiv(D, BLOCK_D))](grad_out, ids, gw, D, grad_out.stride(0), grad_out.stride(1),
                                          ids.stride(0), BLOCK_D=BLOCK_D)
    return gw
