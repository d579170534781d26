"""``ktui.core.inspect.diff``: two hand-made results with small SASS files compared, rendered and written as JSON.
No workers: the comparison is pure."""

from __future__ import annotations

import pytest

from ktui.core.inspect import diff
from ktui.core.results import LadderResult, RungResult, Status
from ktui.core.store import sha256
from ktui.core.workspace import Workspace

HEAD = """
//--------------------- .text.add_kernel       --------------------------
	.section	.text.add_kernel,"ax",@progbits
.text.add_kernel:
"""
A_SASS = (
    HEAD
    + """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E R4, desc[UR6][R2.64] ;
        /*0020*/                   LDG.E R5, desc[UR6][R2.64+0x4] ;
        /*0030*/                   FADD R6, R4, R5 ;
        /*0040*/                   STG.E desc[UR6][R8.64], R6 ;
        /*0050*/                   EXIT ;
"""
)
B_SASS = (
    HEAD
    + """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128 R12, desc[UR6][R2.64] ;
        /*0020*/                   FADD R6, R12, R13 ;
        /*0030*/                   STG.E desc[UR6][R8.64], R6 ;
        /*0040*/                   EXIT ;
"""
)


def make_side(
    ws: Workspace, version: str, sass_text: str, regs: int, mix: dict[str, int], warnings: list[str] = ()
) -> tuple:
    k = ws.kernel(ws.root / f"kernels/add/{version}.py")
    k.path.write_text(f"# {version}\ndef custom_kernel(data):\n    return data\n")
    sass_file = f".ktui/dumps/add/{version}/add_kernel.sass"
    (ws.root / sass_file).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / sass_file).write_text(sass_text)
    dumps = RungResult(
        "dumps",
        Status.OK,
        figures={
            "arch": "sm_90a",
            "kernels": [
                {
                    "kernel": "add_kernel",
                    "language": "triton",
                    "resources": {"registers": regs, "local": 0, "shared": 0},
                    "mix": mix,
                    "warnings": list(warnings),
                    "files": {"sass": sass_file},
                }
            ],
        },
    )
    res = LadderResult(
        "add",
        version,
        f"kernels/add/{version}.py",
        {"type": "cpu"},
        [RungResult("compile", Status.OK), dumps],
        source_sha256=sha256(k.path.read_bytes()),
    )
    return ws, k, res


@pytest.fixture
def sides(tmp_path):
    (tmp_path / "references").mkdir()
    (tmp_path / "references/add.py").write_text("def ref_kernel(d):\n    return d\n")
    (tmp_path / "kernels/add").mkdir(parents=True)
    ws = Workspace(tmp_path)
    a = make_side(ws, "v1", A_SASS, 12, {"LDG.32": 2, "FADD": 1, "STG.32": 1})
    b = make_side(ws, "v2", B_SASS, 16, {"LDG.128": 1, "FADD": 1, "STG.32": 1}, ["a red flag"])
    return a, b


def test_compare_results_gives_typed_sides_resources_mix_and_the_normalized_diff(sides):
    a, b = sides
    d = diff.compare_results([a, b])
    assert isinstance(d, diff.DiffResult) and isinstance(d.a, diff.DiffSide)
    assert (d.a.kernel, d.a.file, d.b.file, d.a.arch) == ("add/v1", "kernels/add/v1.py", "kernels/add/v2.py", "sm_90a")
    assert d.a.kernels[0] == diff.KernelDumps(
        "add_kernel",
        "triton",
        {"registers": 12, "local": 0, "shared": 0},
        {"LDG.32": 2, "FADD": 1, "STG.32": 1},
        [],
        {"sass": ".ktui/dumps/add/v1/add_kernel.sass"},
    )
    regs = next(r for r in d.resources if r.name == "registers")
    assert (regs.a, regs.b, regs.delta) == (12, 16, 4)
    assert [r.name for r in d.resources] == list(diff.RESOURCES)
    assert [(r.name, r.a, r.b, r.delta) for r in d.mix_delta] == [
        ("LDG.128", 0, 1, 1),
        ("LDG.32", 2, 0, -2),
        ("FADD", 1, 1, 0),
        ("STG.32", 1, 1, 0),
    ]
    assert d.a.normalized[0] == "== add_kernel" and len(d.a.normalized) == 7 and len(d.b.normalized) == 6
    assert d.diff[:2] == ["--- kernels/add/v1.py", "+++ kernels/add/v2.py"]
    assert "-LDG.E R, desc[UR][R.64+0x4]" in d.diff and "+LDG.E.128 R, desc[UR][R.64]" in d.diff
    assert d.changed == 3  # two loads out, one wider load in (the FADD is the same once normalized)


def test_json_has_the_public_fields_only(sides):
    a, b = sides
    j = diff.compare_results([a, b]).to_json()
    assert set(j) == {"a", "b", "resources", "mix_delta", "diff", "lines", "changed", "stage", "notes"}
    assert set(j["a"]) == {"kernel", "file", "sha256", "arch", "spec", "kernels", "ncu"}
    assert j["a"]["ncu"] is None and j["lines"] == {"a": 7, "b": 6} and j["changed"] == 3
    assert j["resources"][0] == {"resource": "registers", "a": 12, "b": 16, "delta": 4}
    assert j["mix_delta"][0] == {"family": "LDG.128", "a": 0, "b": 1, "delta": 1}
    assert j["b"]["kernels"][0]["warnings"] == ["a red flag"]


def test_render(sides):
    a, b = sides
    d = diff.compare_results([a, b])
    text = diff.render(d).splitlines()
    assert (
        text[0] == f"A: kernels/add/v1.py ({a[2].source_sha256[:12]})  B: kernels/add/v2.py "
        f"({b[2].source_sha256[:12]})  [sm_90a]"
    )
    assert text[2] == f"{'resource':<16}{'A':>10}{'B':>10}{'delta':>10}"
    assert text[3] == f"{'registers':<16}{12:>10}{16:>10}{'+4':>10}"
    assert "warning B add_kernel: a red flag" in text
    i = text.index("normalized SASS: 7 lines in A, 6 in B, 3 changed")
    assert text[i + 1 :] == d.diff
    wide = diff.render(diff.compare_results([a, b]), side_by_side=True)
    assert "LDG.E.128" in wide
    # which launch the dumps compiled, and a note when A and B are two problems' versions (new-user trial 21 F18)
    for _, _, res in (a, b):
        res.rung("dumps").figures["spec"] = {"n": 4096, "dtype": "bfloat16"}
    text = diff.render(diff.compare_results([a, b])).splitlines()
    assert text[1] == "the launch of spec=(4096, bf16) on both", text[:3]
    b[2].rung("dumps").figures["spec"] = {"n": 1024, "dtype": "float32"}
    import dataclasses

    other = dataclasses.replace(diff.side(b[0], b[1], b[2]), kernel="mm/v2")
    text = diff.render(diff.compare_sides(diff.side(*a), other)).splitlines()
    assert text[1] == "A: spec=(4096, bf16); B: spec=(1024, fp32)", text[:3]
    assert text[2] == "note: A and B are versions of two problems (add, mm): their kernels compute different ops"


def test_a_result_without_dumps_is_a_diff_error(sides):
    a, (ws, k, res) = sides
    res.rungs = res.rungs[:1]
    with pytest.raises(diff.DiffError, match="add/v2 has no dumps yet"):
        diff.compare_results([a, (ws, k, res)])


def test_has_current_dumps_checks_the_source_and_the_files(sides):
    (ws, k, res), _ = sides
    assert diff.has_current_dumps(ws, k, res)
    assert not diff.has_current_dumps(ws, k, None)
    (ws.root / ".ktui/dumps/add/v1/add_kernel.sass").unlink()
    assert not diff.has_current_dumps(ws, k, res)
    k.path.write_text("# changed\n")
    assert not diff.has_current_dumps(ws, k, res)


def test_ktui_diff_takes_problem_version_names_and_keeps_the_failed_verdict_it_replaces(make_ws):
    """``ktui diff vector_add/v1 vector_add/v2`` (names, as the rest of ktui takes them) compiles and dumps both;
    v2 had failed its run and was edited since: its stored result is now compile+dumps of the new source, and
    ``ktui status`` says it is unverified with ``✗ run`` as its last verdict, stale. A name that is no version is
    a usage error naming the versions that exist."""
    from ktui.core.results import ErrorInfo
    from ktui.core.status import STALE_KERNEL, UNVERIFIED
    from ktui.core.store import ResultStore

    from .jsonout import data_of
    from .test_cli import ktui

    ws = make_ws(["vector_add"])
    v2 = ws.root / "kernels/vector_add/v2.py"
    failed = RungResult("run", Status.FAILED, 0.1, "RuntimeError: boom", error=ErrorInfo("RuntimeError", "boom"))
    old = LadderResult(
        "vector_add",
        "v2",
        "kernels/vector_add/v2.py",
        {"type": "cpu", "interpreter": True},
        [RungResult("compile", Status.OK, 0.1), failed],
        source_sha256=sha256(v2.read_bytes()),
        reference_sha256=sha256(ws.reference_path("vector_add").read_bytes()),
        started_at=1.0,
    )
    ResultStore(ws).save(old)
    v2.write_text(v2.read_text() + "\n# edited since its run failed\n")
    st = data_of(ktui("status", "--json", cwd=ws.root).stdout, "status")["problems"][0]["versions"][1]
    assert (st["verdict"], st["stale"]) == ("✗ run", STALE_KERNEL)

    p = ktui("diff", "vector_add/v1", "vector_add/v2", "--device", "cpu", cwd=ws.root)
    assert p.returncode == 0, p.stderr
    assert "vector_add/v1" in p.stdout and "vector_add/v2" in p.stdout
    # a side compiled now says so as it starts and when done (new-user trial 20 M6: 31 s of silence)
    assert "ktui diff: compiling vector_add/v2 and dumping its code ..." in p.stderr, p.stderr
    assert "ktui diff: vector_add/v2 dumped in " in p.stderr, p.stderr
    st = data_of(ktui("status", "--json", cwd=ws.root).stdout, "status")["problems"][0]["versions"][1]
    assert (st["verdict"], st["stale"], st["unverified"]) == ("◦ compiled", "", UNVERIFIED)
    assert (st["last_verdict"], st["last_verdict_stale"]) == ("✗ run", STALE_KERNEL)
    text = ktui("status", cwd=ws.root).stdout.splitlines()
    assert text[2].startswith("  v2   ◦ compiled") and "UNVERIFIED" in text[2] and "last verdict ✗ run" in text[2]

    bad = ktui("diff", "vector_add/v1", "vector_add/v9", cwd=ws.root)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "ktui: error: no such kernel file: vector_add/v9 (nor a version: vector_add has v1, v2, v3; give "
        "kernels/<problem>/<version>.py or problem/version)"
    )


def test_a_version_whose_ladder_stopped_before_dumps_says_so_and_the_diff_tab_skips_it(sides):
    """A new user's v3 was compared with v2, whose run had FAILED: 'no dumps yet: run its ladder' sent them to run
    a version that had run. The tab compares with the nearest earlier version that has dumps; the message says the
    ladder stopped and how to pick another."""
    from ktui.core.results import ErrorInfo
    from ktui.core.workspace import KernelRef
    from ktui.tui.inside import DiffView

    (ws, k1, r1), (_, k2, r2) = sides
    stopped = LadderResult(
        k2.problem, k2.version, r2.kernel, r2.device,
        [RungResult("compile", Status.OK), RungResult("run", Status.FAILED, error=ErrorInfo("ValueError", "no"))],
        r2.source_sha256, r2.reference_sha256,
    )  # fmt: skip
    with pytest.raises(diff.DiffError, match=r"add/v2 has no dumps: its ladder stopped at run \(FAILED\), before"):
        diff.compare_results([(ws, k1, r1), (ws, k2, stopped)])
    (ws.root / "kernels/add/v3.py").write_text((ws.root / "kernels/add/v2.py").read_text())
    k3 = KernelRef("add", "v3", ws.root)
    results = {k1.key: r1, k2.key: stopped}
    assert DiffView.compare_with(ws, k3, results) == k1  # v2 stopped before dumps: v1 has them
    assert DiffView.compare_with(ws, k3, {k2.key: stopped}) == k2  # none has dumps: the one before, its message
    assert DiffView.compare_with(ws, k3, {k1.key: r1, k2.key: r2}) == k2  # v2 has dumps: the version before


def test_the_mix_delta_puts_total_last():
    """New-user trial 19: ``LDG.32 1 1 +0`` came after the ``total`` row."""
    from ktui.core.inspect.sass import mix_delta

    rows = mix_delta({"LDG.32": 1, "FFMA": 2, "total": 72}, {"LDG.32": 1, "FFMA": 130, "total": 200})
    assert [r["family"] for r in rows] == ["FFMA", "LDG.32", "total"]


def test_resources_of_a_two_kernel_version_are_its_largest_kernels_never_a_sum():
    """New-user trial 23, F20: a version launching two kernels of 48 and 40 registers read "registers 88"; each
    resource is the largest kernel's, and each kernel's own is listed under the table."""
    from ktui.core.inspect.diff import DiffSide, KernelDumps, compare_sides, render

    def kd(name: str, regs: int, smem: int) -> KernelDumps:
        return KernelDumps(name, "triton", {"registers": regs, "shared": smem})

    a = DiffSide("p/v1", "kernels/p/v1.py", "a" * 64, "sm_90a", [kd("one_kernel", 48, 1024)])
    b = DiffSide("p/v2", "kernels/p/v2.py", "b" * 64, "sm_90a", [kd("partial", 48, 1024), kd("ln", 40, 2048)])
    d = compare_sides(a, b)
    regs = next(r for r in d.resources if r.name == "registers")
    shared = next(r for r in d.resources if r.name == "shared")
    assert (regs.a, regs.b, shared.a, shared.b) == (48, 48, 1024, 2048)
    text = render(d).splitlines()
    assert text[2].endswith("(the largest kernel's)"), text[2]
    assert "  B partial: registers 48, shared 1024" in text and "  B ln: registers 40, shared 2048" in text, text


def test_a_side_that_cannot_be_dumped_is_not_said_dumped(make_ws):
    """New-user trial 25, F18: ``ktui diff`` printed "v5 dumped in 10.6 s" and then the dumps rung's failure."""
    from .test_cli import ktui

    ws = make_ws(["vector_add"])
    v2 = ws.root / "kernels" / "vector_add" / "v2.py"
    v2.write_text(v2.read_text().replace("def custom_kernel(", "def custom_kernel((", 1))  # a SyntaxError
    p = ktui("diff", "vector_add/v1", "vector_add/v2", "--device", "cpu", cwd=ws.root)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "vector_add/v2: could not dump its code (" in p.stderr and "SyntaxError" in p.stderr, p.stderr
    assert "vector_add/v2 dumped in" not in p.stderr, p.stderr


def test_an_autotuned_side_is_compared_one_config_at_a_time():
    """New-user trial 28, F3: ``ktui diff v2 v8`` (v8 = v2 + @triton.autotune with 4 configs) summed the four
    configs' instructions and laid their SASS end to end against v2's one kernel ("HMMA 8 36"). One config per
    kernel is compared: the one matching the other side's, else the first, or ``--config N``; a note says which."""
    from ktui.core.inspect.diff import DiffError, DiffSide, KernelDumps, compare_sides, render

    def kd(bn: int, hmma: int, warps: int = 4) -> KernelDumps:
        return KernelDumps(
            "mm",
            "triton",
            {"registers": 40 + bn // 8},
            {"HMMA": hmma},
            num_warps=warps,
            num_stages=3,
            constexprs={"BLOCK_N": bn},
        )

    a = DiffSide("p/v2", "kernels/p/v2.py", "a" * 64, "sm_90a", [kd(64, 8)], normalized=["A"], kernel_lines=[["A"]])
    configs = [kd(32, 4), kd(64, 9), kd(128, 16), kd(256, 32, 8)]
    b = DiffSide(
        "p/v8",
        "kernels/p/v8.py",
        "b" * 64,
        "sm_90a",
        configs,
        normalized=["b0", "b1", "b2", "b3"],
        kernel_lines=[["b0"], ["b1"], ["b2"], ["b3"]],
    )
    d = compare_sides(a, b)
    hmma = next(r for r in d.mix_delta if r.name == "HMMA")
    assert (hmma.a, hmma.b) == (8, 9)  # the config of BLOCK_N=64, num_warps=4, as A's: not 4 + 9 + 16 + 32
    assert len(d.b.kernels) == 1 and d.b.normalized == ["b1"], d.b
    assert d.notes == [
        "B mm: 4 autotune configs compiled; compared config 1 (BLOCK_N=64, num_warps=4, num_stages=3); "
        "`ktui diff --config N` compares another"
    ], d.notes
    assert "note: B mm: 4 autotune configs compiled; compared config 1" in render(d)
    d3 = compare_sides(a, b, config=3)
    assert next(r.b for r in d3.mix_delta if r.name == "HMMA") == 32 and d3.b.normalized == ["b3"]
    for wrong in (9, 4, -1):  # no such config: said, not clipped to the last or the first (new-user trial 29, F12)
        with pytest.raises(DiffError, match=rf"--config {wrong}: B's mm has 4 autotune configs compiled, 0 to 3"):
            compare_sides(a, b, config=wrong)
    plain = compare_sides(a, DiffSide("p/v1", "kernels/p/v1.py", "c" * 64, "sm_90a", [kd(32, 4)]))
    assert plain.notes == [] and "notes" in plain.to_json()
