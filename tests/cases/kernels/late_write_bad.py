"""BAD (late-write): returns its output before the work is done; a thread finishes writing it afterwards. A checker
that reads the output a little later sees the right answer; the caller, at return, does not."""

import threading
import time

import torch


def custom_kernel(data):
    a, b = data
    out = torch.zeros_like(a)

    def finish():
        time.sleep(0.01)
        torch.add(a, b, out=out)

    threading.Thread(target=finish, daemon=True).start()
    return out
