"""BAD (side-stream, GPU): the product runs on a stream of its own and the call returns at once: CUDA events on the
current stream time nothing."""

import torch

_stream = {}


def custom_kernel(data):
    a, b = data
    s = _stream.setdefault(a.device, torch.cuda.Stream(a.device))
    s.wait_stream(torch.cuda.current_stream(a.device))
    with torch.cuda.stream(s):
        out = torch.matmul(a, b)
    return out
