"""BAD (blind-timer, GPU): the side-stream product of side_stream_bad, plus a memo of the last call keyed on the input
pointers and a cheap fingerprint of their first elements. Every event-timed call has fresh inputs, so each computes
on the side stream, which the events do not see; a host loop that reused one input set (ktui's before) hit the memo
on every call and timed nothing either. The host loop now gives every call fresh inputs and synchronizes each."""

import torch

_stream = {}
_last = {}


def custom_kernel(data):
    a, b = data
    key = (a.data_ptr(), b.data_ptr(), a.reshape(-1)[:16].sum().item(), b.reshape(-1)[:16].sum().item())
    hit = _last.get("call")
    if hit is not None and hit[0] == key:
        return hit[1]
    s = _stream.setdefault(a.device, torch.cuda.Stream(a.device))
    s.wait_stream(torch.cuda.current_stream(a.device))
    with torch.cuda.stream(s):
        out = torch.matmul(a, b)
    _last["call"] = (key, out)
    return out
