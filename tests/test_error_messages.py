"""A kernel's exception carries its cause into the message (the brief: "crash messages are empty"): Triton's
CompilationError shows the kernel's source line and hides why it failed (on the H200 of 2026-12-04, an int8 ``tl.dot``
into an int32 accumulator without ``out_dtype`` on Triton 3.6: a bare ``assert`` in triton/language/semantic.py).

PYTEST_DONT_REWRITE: the bare ``assert`` below must stay bare, as in Triton."""

from __future__ import annotations

import pytest

from ktui.worker.errors import CaseFailed, cause_text, reraise_as_case


class CompilationError(Exception):  # Triton's shape: the kernel's source, the caret, no reason
    pass


def _semantic_dot(acc_dtype: str, out_dtype: str) -> None:
    assert acc_dtype == out_dtype


def _compile() -> None:
    try:
        _semantic_dot("int32", "fp32")
    except AssertionError as e:
        raise CompilationError("at 19:18:\n    acc = tl.dot(a, b, acc)\n          ^") from e


def test_a_bare_assert_under_a_compilation_error_is_named_with_its_source_line():
    with pytest.raises(CaseFailed) as e:
        try:
            _compile()
        except CompilationError as exc:
            reraise_as_case(exc, "spec=(129, 64, 1024)")
    msg = str(e.value)
    assert msg.startswith("spec=(129, 64, 1024): CompilationError: at 19:18:"), msg
    assert msg.endswith(
        "caused by AssertionError: assert acc_dtype == out_dtype (test_error_messages.py:19 in _semantic_dot)"
    ), msg


def test_a_cause_with_a_message_is_appended_once_and_no_cause_adds_nothing():
    try:
        try:
            raise ValueError("only int8 supported")
        except ValueError as v:
            raise RuntimeError("lowering failed") from v
    except RuntimeError as exc:
        assert cause_text(exc) == "\ncaused by ValueError: only int8 supported"
    try:
        try:
            raise ValueError("bad block")
        except ValueError as v:
            raise RuntimeError("bad block") from v  # the message holds it already
    except RuntimeError as exc:
        assert cause_text(exc) == ""
    assert cause_text(RuntimeError("plain")) == ""
