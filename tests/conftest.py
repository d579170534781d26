"""Shared fixtures: temporary workspaces built from the repository's examples and the bad kernels in
``tests/kernels``, and worker pools that stay warm across tests (torch imports once per pool).

Front-end-style tests take a ``Session`` on the shared pool (``session_for``): the same assembly of pool, ladder,
scheduler and store as the TUI and the CLI. The ladder's own tests take a bare ``Ladder`` on it (``ladder_for``):
no store, no queue, just the unit under test."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ktui.core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
BAD = Path(__file__).resolve().parent / "kernels"


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """A test that runs ktui's CLI in this process (``cli.main``) leaves ``stop_on_signals``'s SIGTERM and SIGHUP
    handlers behind: the pytest-xdist worker then raised ``Signalled`` in whatever it ran when CI ended it. Each test
    gets the handlers it found back."""
    import signal

    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in kept.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


def cuda_available() -> bool:
    from ktui.core.device import cuda_available as probe

    return probe()


SLOW_LIST = Path(__file__).resolve().parent / "slow.txt"


def slow_tests() -> dict[str, float]:
    """``tests/slow.txt``: the tests marked ``slow`` (node id -> the seconds one took on 2 cores beside another
    test, as measured). They are the heaviest interpreted ladders; the README's test command and ``.ci/run`` leave
    them out (``-m "not slow"``: CI has 90 minutes on this 2-core machine) and ``python -m pytest -n auto -m slow``
    runs them."""
    out = {}
    for line in SLOW_LIST.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, node = line.split(maxsplit=1)
            out[node.strip()] = float(seconds)
    return out


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects on the marks
def pytest_collection_modifyitems(config, items):
    slow = slow_tests()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


MakeWorkspace = Callable[..., Workspace]


@pytest.fixture
def make_ws(tmp_path) -> MakeWorkspace:
    """``make_ws(problems, kernels)``: a workspace in ``tmp_path/ws`` with the repository's references for
    ``problems`` and ``kernels`` = {"problem/version": source text, or a path to copy}; with ``kernels`` None, the
    repository's own versions of those problems."""

    def make(problems: list[str], kernels: dict[str, str | Path] | None = None, name: str = "ws") -> Workspace:
        root = tmp_path / name
        (root / "references").mkdir(parents=True, exist_ok=True)
        (root / "kernels").mkdir(exist_ok=True)
        for p in problems:
            shutil.copy(ROOT / "references" / f"{p}.py", root / "references" / f"{p}.py")
            if kernels is None:
                shutil.copytree(ROOT / "kernels" / p, root / "kernels" / p, dirs_exist_ok=True)
        for key, src in (kernels or {}).items():
            problem, version = key.split("/")
            d = root / "kernels" / problem
            d.mkdir(parents=True, exist_ok=True)
            text = src.read_text() if isinstance(src, Path) else src
            (d / f"{version}.py").write_text(text)
        return Workspace(root)

    return make


@pytest.fixture(scope="session")
def pool_ws(tmp_path_factory) -> Workspace:
    root = tmp_path_factory.mktemp("pool")
    (root / "references").mkdir()
    (root / "kernels").mkdir()
    return Workspace(root)


@pytest.fixture(scope="session")
def cpu_pool(pool_ws):
    """Candidate, judge and compiler workers on the CPU, shared by every test that asks (a crash test restarts the
    worker it crashed; the pool comes back by itself)."""
    from ktui.core.ladder import WorkerPool

    pool = WorkerPool(pool_ws, "cpu")
    pool.start()
    yield pool
    pool.stop()


@pytest.fixture
def ladder_for(cpu_pool):
    """``ladder_for(ws, **options)``: a Ladder on the shared CPU pool."""
    from ktui.core.ladder import Ladder, LadderOptions

    made = []

    def make(ws: Workspace, **opts) -> Ladder:
        lad = Ladder(ws, cpu_pool, options=LadderOptions(**opts))
        made.append(lad)
        return lad

    yield make
    for lad in made:
        lad.close()


@pytest.fixture
def session_for(cpu_pool):
    """``session_for(ws, **options)``: a started headless ``Session`` (``watch=False``) on the shared CPU pool, as
    ``ktui run`` assembles one; stopped after the test (the pool stays warm)."""
    from ktui.core.ladder import LadderOptions
    from ktui.core.session import Session

    made = []

    def make(ws: Workspace, **opts) -> Session:
        session = Session(ws, "cpu", options=LadderOptions(**opts), watch=False, pool=cpu_pool)
        session.start()
        made.append(session)
        return session

    yield make
    for session in made:
        session.stop()
