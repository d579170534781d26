"""BAD: dies of a segmentation fault (as a bad pointer in a C extension or a driver call would)."""

import os
import signal


def custom_kernel(data):
    os.kill(os.getpid(), signal.SIGSEGV)
