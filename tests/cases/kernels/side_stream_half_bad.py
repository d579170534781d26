"""BAD (side-stream, GPU): half of the product runs on a stream of its own, half on the current stream: CUDA events
on the current stream see about half the work, a gap the old 3x host-loop threshold let through."""

import torch

_stream = {}


def custom_kernel(data):
    a, b = data
    m = a.shape[0] // 2
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    main = torch.cuda.current_stream(a.device)
    s = _stream.setdefault(a.device, torch.cuda.Stream(a.device))
    s.wait_stream(main)
    with torch.cuda.stream(s):
        torch.matmul(a[:m], b, out=out[:m])
    torch.matmul(a[m:], b, out=out[m:])
    out.record_stream(s)
    return out
