"""The worker's own exception types, in one module that every handler can import (``server`` and ``candidate`` no
longer import each other for them). ``server.format_error`` turns each into the reply's ``error`` by its class."""

from __future__ import annotations


class KtuiCheckError(Exception):
    """One of ktui's own checks failed (not the kernel's or the reference's code raising): the message says it all,
    so the reply carries no traceback."""


class KernelError(KtuiCheckError):
    """The kernel module does not have what ktui needs (``custom_kernel``)."""


class ProblemError(KtuiCheckError):
    """The reference module is missing something or returned something unusable; the message says what."""


class CaseFailed(Exception):
    """A candidate call failed; the message names the spec and seed, ``__cause__`` is the kernel's exception."""
