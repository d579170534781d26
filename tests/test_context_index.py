"""The context directory (issue 13): chunkers, the SQLite FTS5 index, ``ktui context`` and the agent's
``search_context``. Everything is built in ``tmp_path``: a small git repository (cloned through ``file://``, no
network), a PTX-ISA-like HTML page, a fake installed package; the real triton/cutlass packages are left out
(``KTUI_CONTEXT_PACKAGES``), ``benchmarks/context_search.py`` measures those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ktui.context import chunk as C
from ktui.context import cpp, cpp_scan
from ktui.context import index as I
from ktui.context.cli import cli
from ktui.context.index import ContextError, ContextIndex

from .jsonout import data_of

CORE_PY = '''"""A tiny CuTe-like module."""

import math

TILE = 128


def local_tile(tensor, tiler, coord):
    """Tile ``tensor`` by ``tiler`` and take the tile at ``coord``.

    This is the definition: a long docstring that says a lot about tiles, tilers, coordinates and the layout
    algebra behind them, so that plain BM25 finds the short callers below denser in the word.
    """
    return tensor[coord]


class TiledCopy:
    """A copy split over threads."""

    def retile(self, t):
        return t
'''

CALLER_PY = """from cute.core import local_tile


def tile_all(t, tiler):
    a = local_tile(t, tiler, 0)
    b = local_tile(t, tiler, 1)
    c = local_tile(t, tiler, 2)
    return local_tile(a, b, c)
"""

EXAMPLE_PY = '''"""Example: a GEMM mainloop with local_tile."""
from cute.core import local_tile

def main():
    gA = local_tile(None, (128, 64), (0, 0))  # local_tile the A operand
    return gA
'''

TENSOR_HPP = """// Copyright header
#pragma once
#include <cute/layout.hpp>

#define CUTE_HOST_DEVICE __host__ __device__

namespace cute {

/// A tensor: an engine and a layout.
template <class Engine, class Layout>
struct Tensor {
  Engine engine_;
  Layout layout_;
  CUTE_HOST_DEVICE constexpr auto size() const { return 1; }
};

using IntTuple = int;

// Tile a tensor: the C++ overload
template <class Tensor, class Tiler, class Coord>
CUTE_HOST_DEVICE constexpr
auto
local_partition(Tensor&& tensor, Tiler const& tiler, Coord const& coord)
{
  return tensor;
}

struct SM90_TMA_LOAD_2D {
  static void copy(void const* desc) { asm volatile("cp.async.bulk.tensor.2d" ::); }
};

} // end namespace cute
"""

LAYOUT_MD = """# Layouts

A layout maps coordinates to indices.

## Loads

Use ld.global.nc for read-only data; the compiler emits it for `__ldg`.

```python
# not a heading
x = 1
```

## Stores

st.global writes.
"""


def ptx_page() -> str:
    """A page shaped like NVIDIA's PTX ISA HTML (Sphinx sections, rubrics, notes): cp.async.bulk, its .tensor
    variant, ld, and a section that names cp.async.bulk more often than the instruction's own section."""

    def section(sid: str, title: str, body: str, level: int = 3) -> str:
        return (
            f'<section id="{sid}">\n<h{level}>{title}<a class="headerlink" href="#{sid}" title="Link">¶</a>'
            f"</h{level}>\n{body}\n</section>\n"
        )

    cp = section(
        "data-movement-and-conversion-instructions-cp-async-bulk",
        "9.7.9.25.4.1. Data Movement and Conversion Instructions: cp.async.bulk",
        "<p>Initiates an asynchronous copy operation from one state space to another.</p>\n"
        '<p class="rubric">Syntax</p>\n<pre>cp.async.bulk.dst.src.completion_mechanism [dstMem], [srcMem], size;\n'
        '</pre>\n<p class="rubric">PTX ISA Notes</p>\n<p>Introduced in PTX ISA version 8.0.</p>\n'
        '<p class="rubric">Target ISA Notes</p>\n<p>Requires <code>sm_90</code> or higher.</p>\n'
        '<p class="rubric">Examples</p>\n<pre>cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes '
        "[dstMem], [srcMem], size, [mbar];</pre>",
    )
    tensor = section(
        "data-movement-and-conversion-instructions-cp-async-bulk-tensor",
        "9.7.9.25.5.1. Data Movement and Conversion Instructions: cp.async.bulk.tensor",
        "<p>Tensor copies, the TMA unit. Unlike cp.async.bulk, cp.async.bulk.tensor takes a tensor map.</p>\n"
        '<p class="rubric">Target ISA Notes</p>\n<p>Requires <code>sm_90</code>; .multicast::cluster needs '
        "sm_90a.</p>",
    )
    ld = section(
        "data-movement-and-conversion-instructions-ld",
        "9.7.9.8. Data Movement and Conversion Instructions: ld",
        '<p>Load a register variable from an addressable state space variable.</p>\n<p class="rubric">Syntax</p>\n'
        "<pre>ld{.weak}{.ss}{.cop}.type d, [a];</pre>",
    )
    overview = section(
        "asynchronous-data-movement",
        "9.7.9.25. Asynchronous Data Movement",
        "<p>cp.async.bulk and cp.async.bulk.prefetch; cp.async.bulk with mbarrier; cp.async.bulk everywhere: "
        "cp.async.bulk, cp.async.bulk, cp.async.bulk.</p>",
        level=2,
    )
    bar = section(
        "parallel-synchronization-and-communication-instructions-bar",
        "9.7.13.1. Parallel Synchronization and Communication Instructions: bar, barrier",
        "<p>Barrier synchronization.</p>",
    )
    tid = section("special-registers-tid", "10.1. Special Registers: %tid", "<p>Thread identifier within a CTA.</p>")
    nav = '<nav class="wy-nav-side"><a href="#x">cp.async.bulk</a> <a href="#y">ld</a></nav>'
    return (
        "<!DOCTYPE html>\n<html><head><title>1. Introduction - PTX ISA 8.5</title>"
        "<script>var x = 'cp.async.bulk';</script></head>\n<body>\n"
        + nav
        + "\n<h1>Parallel Thread Execution ISA Version 8.5</h1>\n"
        + overview
        + cp
        + tensor
        + ld
        + bar
        + tid
        + "</body></html>\n"
    )


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Path:
    """A workspace with one reference and one kernel, no packages in its index."""
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "kernels" / "softmax").mkdir(parents=True)
    (root / "references" / "softmax.py").write_text("def ref_kernel(data):\n    return data.softmax(-1)\n")
    (root / "kernels" / "softmax" / "v1.py").write_text("def custom_kernel(data):\n    return data\n")
    monkeypatch.setenv("KTUI_CONTEXT_PACKAGES", "")
    monkeypatch.delenv("KTUI_CONTEXT_DB", raising=False)
    return root


@pytest.fixture
def repo(tmp_path) -> Path:
    """A small git repository: a definition, a caller, an example, a header, docs, a tests folder, a file that
    does not parse, a Doxygen page and a binary."""
    r = tmp_path / "minicute"
    files = {
        "cute/core.py": CORE_PY,
        "cute/caller.py": CALLER_PY,
        "examples/gemm.py": EXAMPLE_PY,
        "include/cute/tensor.hpp": TENSOR_HPP,
        "docs/layout.md": LAYOUT_MD,
        "tests/test_core.py": "def test_local_tile():\n    local_tile(1, 2, 3)\n",
        "cute/broken.py": "def oops(:\n    pass\n",
        "docs/html/tensor_8h.html": '<html><head><meta name="generator" content="Doxygen 1.8.11"/></head>'
        "<body><h1>local_tile</h1></body></html>",
    }
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    (r / "cute" / "blob.py").write_bytes(b"\x00\x01\x02binary")
    _git(r, "init", "-q")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "init")
    return r


def _index(ws: Path) -> ContextIndex:
    ix = ContextIndex.for_workspace(ws)
    ix.update()
    return ix


# -- chunkers --------------------------------------------------------------------------------------------------------


def test_python_is_chunked_by_definition_with_symbols_and_line_ranges():
    chunks = C.chunk_file("core.py", CORE_PY)
    by = {c.symbol: c for c in chunks if c.symbol}
    assert by["local_tile"].start == 8 and by["local_tile"].end == 14 and by["local_tile"].sym_kind == "function"
    assert by["local_tile"].text.startswith("def local_tile(tensor, tiler, coord):")
    assert by["TiledCopy"].sym_kind == "class"
    assert ("TiledCopy.retile", "retile", "method") in [(s.name, s.key, s.kind) for s in by["TiledCopy"].symbols]
    module = [c for c in chunks if not c.symbol]
    assert module[0].start == 1 and "TILE = 128" in module[0].text
    assert [s.name for s in module[0].symbols] == ["TILE"]


def test_a_long_class_is_cut_into_its_header_and_one_chunk_per_method():
    body = "\n".join(f"    def m{i}(self):\n" + "        x = 1\n" * 20 + "        return x\n" for i in range(10))
    src = 'class Big:\n    """Doc."""\n\n' + body
    chunks = C.chunk_python(src)
    assert chunks[0].symbol == "Big" and chunks[0].end == 3
    assert [c.symbol for c in chunks[1:]] == [f"Big.m{i}" for i in range(10)]
    assert chunks[2].start == 4 + 23 and chunks[2].text.startswith("    def m1(self):")


def test_a_python_syntax_error_raises_chunk_error_with_its_line():
    with pytest.raises(C.ChunkError, match="Python syntax error at line 1"):
        C.chunk_file("broken.py", "def oops(:\n    pass\n")


def test_cpp_headers_are_chunked_by_top_level_declaration_inside_namespaces():
    chunks = C.chunk_file("tensor.hpp", TENSOR_HPP)
    got = [(c.symbol, c.sym_kind, c.start, c.end) for c in chunks if c.symbol]
    assert ("CUTE_HOST_DEVICE", "macro", 5, 5) in got
    assert ("Tensor", "struct", 9, 15) in got  # the doc comment above the template is kept with it
    assert ("IntTuple", "alias", 17, 17) in got
    assert ("local_partition", "function", 19, 26) in got
    assert ("SM90_TMA_LOAD_2D", "struct", 28, 30) in got
    assert not any("end namespace" in c.text for c in chunks)  # the namespace's closing brace is no declaration


def test_cpp_symbol_names_the_declaration():
    assert cpp_scan.cpp_symbol(
        "template <class... Args> CUTE_HOST_DEVICE auto make_tiled_copy(Copy_Atom<Args...> a) "
    ) == (
        "make_tiled_copy",
        "function",
    )
    assert cpp_scan.cpp_symbol(
        "struct CUTE_ALIGNAS(16) Copy_Atom<Copy_Traits<Args...>, T> : Copy_Traits<Args...> "
    ) == (
        "Copy_Atom",
        "struct",
    )
    assert cpp_scan.cpp_symbol("static constexpr auto kLayout = make_layout(Shape<_8>{})") == ("kLayout", "variable")
    assert cpp_scan.cpp_symbol("enum class Mode : uint8_t ") == ("Mode", "enum")
    assert cpp_scan.cpp_symbol("template <> CUTLASS_HOST_DEVICE double two<double>()") == ("two", "function")
    assert cpp_scan.cpp_symbol("template <> CUTLASS_HOST_DEVICE complex<float> root_pi< complex<float> >()") == (
        "root_pi",
        "function",
    )
    assert cpp_scan.cpp_symbol("CUTE_HOST_DEVICE bool Layout::operator==(Layout const& b) const ") == (
        "Layout::operator==",
        "function",
    )


# a CUDA header the way CUTLASS writes them: include guard, macros, nested namespaces, templates and their
# specializations, a method whose two #if arms each open its body (unbalanced braces in each arm), #if arms around
# whole declarations, #if 0 dead code, a static-assert macro in a class body, CUDA kernels
UNBALANCED_CUH = """#ifndef KT_COPY_CUH
#define KT_COPY_CUH
#include <cuda.h>

#define KT_DEVICE __forceinline__ __device__

namespace kt {
namespace detail {

/// The copy traits: one specialization per architecture.
template <class Arch, class T>
struct CopyTraits;

// Hopper's: a TMA load
template <class T>
struct CopyTraits<SM90, T> {
  KT_STATIC_ASSERT(sizeof(T) <= 16, "16 bytes at most")
  using ValType = T;
  KT_DEVICE static void
#if defined(__CUDA_ARCH__)
  copy(T const* src, T* dst) {
    asm volatile("cp.async.bulk.tensor.2d" ::);
#else
  copy(T const*, T*) {
    KT_INVALID_CONTROL_PATH("not on the host");
#endif
  }
};

#if defined(KT_SM100_ENABLED)
template <class T> KT_DEVICE void fence_sm100(T) {}
#else
template <class T> KT_DEVICE void fence_sm90(T) {}
#endif

#if 0
void dead_code_never_compiled() {}
#endif

} // namespace detail

/// Tile a tensor.
template <class Tensor, class Tiler>
KT_DEVICE constexpr auto
local_tile(Tensor&& t, Tiler const& tiler)
{
  return t;
}

using IntTuple = int;

} // namespace kt

template <int N>
__global__ void __launch_bounds__(128) softmax_kernel(float const* __restrict__ x, float* y) { y[0] = x[0]; }

extern "C" __global__ void plain_kernel() {}

#endif  // KT_COPY_CUH
"""


def test_cpp_is_chunked_by_tree_sitter_with_unbalanced_if_arms_and_templates():
    assert cpp.chunker().startswith("tree-sitter ") and cpp.fallback_note() == ""
    chunks = C.chunk_file("copy.cuh", UNBALANCED_CUH)
    got = [(c.symbol, c.sym_kind, c.start, c.end) for c in chunks if c.symbol]
    assert got == [
        ("KT_COPY_CUH", "macro", 2, 2),
        ("KT_DEVICE", "macro", 5, 5),
        ("CopyTraits", "declaration", 10, 12),  # the doc comment kept with it
        ("CopyTraits", "struct", 14, 28),  # to its own closing brace: the #if arms did not run it to the end
        ("fence_sm100", "function", 31, 31),  # both arms of a balanced #if are indexed
        ("fence_sm90", "function", 33, 33),
        ("local_tile", "function", 42, 48),
        ("IntTuple", "alias", 50, 50),
        ("softmax_kernel", "kernel", 54, 55),
        ("plain_kernel", "kernel", 57, 57),
    ]
    by = {c.symbol: c for c in chunks if c.symbol}
    traits = next(c for c in chunks if c.sym_kind == "struct")
    assert [(s.name, s.key, s.kind) for s in traits.symbols] == [
        ("CopyTraits", "copytraits", "struct"),
        ("CopyTraits::copy", "copy", "method"),  # the member, from the first arm of its #if
    ]
    assert traits.text.splitlines()[-1] == "};" and "KT_INVALID_CONTROL_PATH" in traits.text  # the file's lines
    assert (
        by["local_tile"].head
        == "template <class Tensor, class Tiler> KT_DEVICE constexpr auto local_tile(Tensor&& t, Tiler const& tiler)"
    )
    assert by["softmax_kernel"].head.startswith("template <int N> __global__ void __launch_bounds__(128)")
    assert not any("dead_code_never_compiled" in c.text for c in chunks)  # #if 0
    assert not any(c.text.strip() in ("}", "} // namespace detail") for c in chunks)


def test_the_brace_scanner_runs_a_declaration_with_unbalanced_if_arms_to_the_end_of_the_file():
    """Why tree-sitter: the fallback scanner on the same header (the issue's bug, kept as the fallback's limit) runs
    the struct past its end, to the brace that closes the namespace (with no namespace: to the end of the file)."""
    traits = next(c for c in cpp_scan.chunk_cpp(UNBALANCED_CUH) if c.symbol == "CopyTraits" and c.start > 12)
    assert traits.end == 40 and "fence_sm90" in traits.text
    flat = UNBALANCED_CUH.replace("} // namespace detail", "").replace("} // namespace kt", "")
    traits = next(c for c in cpp_scan.chunk_cpp(flat) if c.symbol == "CopyTraits" and c.start > 12)
    assert "plain_kernel" in traits.text and traits.end >= 57


def test_a_long_cpp_record_is_cut_into_its_head_and_one_chunk_per_member_function():
    methods = "\n".join(
        f"  /// method {i}\n  CUTE_HOST_DEVICE int m{i}() const {{\n" + "    int x = 1;\n" * 20 + "    return x;\n  }\n"
        for i in range(10)
    )
    src = "namespace cute {\nstruct Big : Base {\n  int field_;\n\n" + methods + "};\n}\n"
    chunks = cpp.chunk_cpp(src)
    assert [(c.symbol, c.sym_kind) for c in chunks] == [("Big", "struct")] + [
        (f"Big::m{i}", "method") for i in range(10)
    ]
    assert (chunks[0].start, chunks[0].end) == (2, 4)
    assert chunks[1].start == 5 and chunks[1].text.startswith("  /// method 0\n  CUTE_HOST_DEVICE int m0() const {")
    assert [s.key for s in chunks[2].symbols] == ["m1"]


def test_without_tree_sitter_the_scanner_chunks_and_ktui_context_list_says_so(ws, tmp_path, monkeypatch, capsys):
    # the import failing for real, in a fresh interpreter
    code = (
        "import sys; sys.modules['tree_sitter'] = None\n"
        "from ktui.context import cpp\n"
        "print(cpp.chunker()); print(cpp.fallback_note())\n"
        "print([c.symbol for c in cpp.chunk_cpp('struct A { int x; };')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("scanner (tree-sitter cannot be imported: ModuleNotFoundError")
    assert "chunked by a brace scanner" in out[1] and out[2] == "['A']"
    # an index built with tree-sitter, then opened without it: the C++ files are chunked again, and list says so
    (ws / "context" / "hdr").mkdir(parents=True)
    (ws / "context" / "hdr" / "copy.cuh").write_text(UNBALANCED_CUH)
    ix = _index(ws)
    assert ix.search("local_tile")[0].end == 48
    ix.close()
    monkeypatch.setattr(cpp, "_LANGUAGE", None)
    monkeypatch.setattr(cpp, "_IMPORT_ERROR", "ModuleNotFoundError: No module named 'tree_sitter'")
    ix = ContextIndex.for_workspace(ws)
    st = ix.update()
    assert st.chunked == 1 and st.unchanged == st.seen - 1  # the header, read again by the scanner
    traits = [h for h in ix.search("CopyTraits", n=5) if h.sym_kind == "struct"]
    assert max(h.end for h in traits) == 40  # (the scanner's limit)
    assert cli(["--workspace", str(ws), "list"]) == 0
    text = capsys.readouterr().out
    assert "C++/CUDA chunker: scanner (tree-sitter cannot be imported: ModuleNotFoundError" in text
    assert "note: tree-sitter cannot be imported" in text and "pip install tree-sitter tree-sitter-cpp" in text
    assert cli(["--workspace", str(ws), "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["cpp_chunker"].startswith("scanner")


def test_markdown_and_rst_are_chunked_by_heading_and_code_fences_are_not_headings():
    md = C.chunk_markdown(LAYOUT_MD)
    assert [(c.symbol, c.start, c.anchor) for c in md] == [
        ("Layouts", 1, "layouts"),
        ("Loads", 5, "loads"),
        ("Stores", 14, "stores"),
    ]
    rst = C.chunk_rst("Title\n=====\n\nintro\n\nSection two\n-----------\n\nbody\n")
    assert [(c.symbol, c.start, c.end) for c in rst] == [("Title", 1, 5), ("Section two", 6, 9)]


def test_the_ptx_page_is_chunked_by_instruction_section_with_its_notes_and_examples():
    chunks = C.chunk_html(ptx_page())
    by = {c.symbol: c for c in chunks if c.symbol}
    cp = by["cp.async.bulk"]
    assert cp.kind == "ptx" and cp.sym_kind == "instruction"
    assert cp.anchor == "data-movement-and-conversion-instructions-cp-async-bulk"
    for part in (
        "Syntax",
        "PTX ISA Notes",
        "Introduced in PTX ISA version 8.0",
        "Target ISA Notes",
        "sm_90",
        "Examples",
    ):
        assert part in cp.text, part
    assert "mbarrier::complete_tx::bytes" in cp.text and "Tensor copies" not in cp.text  # its own section only
    assert "¶" not in cp.text and "var x" not in cp.text  # header links and scripts dropped
    assert by["cp.async.bulk.tensor"].anchor.endswith("-cp-async-bulk-tensor")
    assert "sm_90a" in by["cp.async.bulk.tensor"].text
    assert by["ld"].sym_kind == "instruction"
    assert not any("wy-nav" in c.text or c.text.startswith("cp.async.bulk ld") for c in chunks)  # the nav is dropped


def test_doxygen_pages_are_recognized():
    assert C.is_doxygen('<html><head><meta name="generator" content="Doxygen 1.8.11"/>')
    assert C.is_doxygen("<html><body>x<address>Generated by&#160;<a href='http://www.doxygen.org'>d</a></address>")
    assert not C.is_doxygen(ptx_page())


def test_dumps_are_chunked_by_kernel():
    ptx = (
        ".version 8.5\n.target sm_90a\n\n.visible .entry softmax_kernel(\n.param .u64 p\n)\n{\nld.global.f32 %f1, "
        "[%rd1];\n}\n.func (.param .b32 r) helper(\n)\n{\n}\n.entry second(\n)\n{\n}\n"
    )
    chunks = C.chunk_file("0-k.ptx", ptx)
    assert [(c.symbol, c.start) for c in chunks] == [("", 1), ("softmax_kernel", 4), ("helper", 10), ("second", 14)]
    sass = "\tcode for sm_90a\n\t\tFunction : kern_a\n  /*0000*/ LDC R1 ;\n\t\tFunction : kern_b\n  /*0000*/ EXIT ;\n"
    assert [c.symbol for c in C.chunk_file("x.sass", sass)] == ["", "kern_a", "kern_b"]
    nvdis = "//------- .text.softmax_kernel  -------\n  /*0000*/ LDC R1 ;\n"
    assert [(c.symbol, c.sym_kind) for c in C.chunk_file("x.sass", nvdis)] == [("softmax_kernel", "kernel")]


# -- the index -------------------------------------------------------------------------------------------------------


def test_context_add_clones_a_git_repository_shallow_and_indexes_it(ws, repo, capsys):
    assert cli(["--workspace", str(ws), "add", f"file://{repo}"]) == 0
    dest = ws / "context" / "minicute"
    assert (dest / ".git").is_dir() and not dest.is_symlink()
    assert _git(dest, "rev-parse", "--is-shallow-repository").strip() == "true"
    manifest = json.loads((ws / "context" / ".sources.json").read_text())
    assert manifest["minicute"] == {"type": "clone", "origin": f"file://{repo}"}
    out = capsys.readouterr().out
    assert "1 failed to parse" in out and "failed: context/minicute/cute/broken.py: Python syntax error" in out
    ix = ContextIndex.for_workspace(ws)
    hits = ix.search("local_tile")
    assert hits[0].cite == "context/minicute/cute/core.py:8" and hits[0].why == "definition"


def test_an_exact_symbols_definition_ranks_above_its_callers_and_examples(ws, repo):
    cli(["--workspace", str(ws), "add", str(repo)])  # a path: linked, not cloned
    assert (ws / "context" / "minicute").is_symlink()
    ix = ContextIndex.for_workspace(ws)
    hits = ix.search("local_tile", n=10)
    paths = [h.path for h in hits]
    assert paths[0] == "context/minicute/cute/core.py" and hits[0].line == 8
    assert hits[0].snippet.startswith("def local_tile(tensor, tiler, coord):")
    assert paths.index("context/minicute/cute/caller.py") > 0 and paths.index("context/minicute/examples/gemm.py") > 0
    # a dotted or qualified use finds the same definition
    assert ix.search("cute.local_tile")[0].cite == "context/minicute/cute/core.py:8"
    assert ix.search("TiledCopy.retile")[0].path == "context/minicute/cute/core.py"


def test_a_dotted_name_with_a_word_finds_the_definition_that_names_it_without_its_module(ws, repo):
    """New-user trial 20 L9: ``tl.cumsum reverse`` found nothing where ``cumsum reverse`` found the definition:
    a dotted term also matches its last component."""
    cli(["--workspace", str(ws), "add", str(repo)])
    ix = ContextIndex.for_workspace(ws)
    hits = ix.search("cute.local_tile coordinates")
    assert hits and hits[0].path == "context/minicute/cute/core.py" and 8 <= hits[0].line <= 12, hits
    # every word matched where some chunk holds them all; else the chunks holding some, marked so (trial 29, F9)
    partial = ix.search("cute.local_tile zzzznotaword")
    assert partial and all(h.why == "some words" for h in partial), partial
    assert partial[0].path == "context/minicute/cute/core.py", partial
    assert all(h.why != "some words" for h in hits)


def test_without_the_symbol_table_bm25_ranks_near_names_above_the_exact_definition(ws, repo):
    """What the symbol table is for: BM25 over trigrams ranks the short ``make_tiled_copy_A`` and ``_B`` above the
    long ``def make_tiled_copy`` (as on the installed CuTeDSL: ``make_tiled_copy_S`` at atom.py:1299 above
    ``make_tiled_copy`` at 1039); ``search`` puts the exact definition first."""
    doc = "\n".join(f"    line {i} of a long docstring about copies" for i in range(40))
    (repo / "cute" / "atom.py").write_text(
        f'def make_tiled_copy(atom, thr, val):\n    """Make a tiled copy.\n{doc}\n    """\n    return atom\n\n\n'
        "def make_tiled_copy_A(atom, mma):\n    return make_tiled_copy(atom, mma, 0)\n\n\n"
        "def make_tiled_copy_B(atom, mma):\n    return make_tiled_copy(atom, mma, 1)\n"
    )
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    ix = _index(ws)
    plain = ix._rows(ix._fts("fts_tri", '"make_tiled_copy"', None, 5))
    first = min(plain, key=lambda c: ix._fts("fts_tri", '"make_tiled_copy"', None, 5).index(c))
    assert plain[first][5] != "make_tiled_copy"
    hits = ix.search("make_tiled_copy")
    assert (hits[0].cite, hits[0].symbol, hits[0].why) == (
        "context/minicute/cute/atom.py:1",
        "make_tiled_copy",
        "definition",
    )
    assert {h.symbol for h in hits[1:3]} == {"make_tiled_copy_A", "make_tiled_copy_B"}


def test_tests_folders_generated_html_and_binaries_are_not_indexed(ws, repo, monkeypatch):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    big = repo / "docs" / "big.md"
    big.write_text("# Big\n" + "x" * 5000)
    monkeypatch.setattr(I, "SIZE_CAP", 4000)
    ix = ContextIndex.for_workspace(ws)
    st = ix.update()
    skipped = dict(st.skipped)
    assert skipped["context/minicute/docs/html/tensor_8h.html"] == "generated (Doxygen)"
    assert skipped["context/minicute/cute/blob.py"] == "binary"
    assert skipped["context/minicute/docs/big.md"] == "over the size cap"
    paths = {r[0] for r in ix.con.execute("SELECT path FROM files").fetchall()}
    assert "tests/test_core.py" not in paths and "cute/core.py" in paths
    assert [h.path for h in ix.search("test_local_tile")] == []


def test_a_ptx_instructions_own_section_ranks_first_for_its_name(ws, tmp_path, capsys):
    page = tmp_path / "ptx-isa.html"
    page.write_text(ptx_page())
    assert cli(["--workspace", str(ws), "add-docs", str(page)]) == 0
    assert (ws / "context" / "docs" / "ptx-isa.html").is_file()
    ix = ContextIndex.for_workspace(ws)
    hits = ix.search("cp.async.bulk")
    assert hits[0].anchor == "data-movement-and-conversion-instructions-cp-async-bulk"
    assert hits[0].cite.startswith("context/docs/ptx-isa.html:") and hits[0].kind == "ptx"
    assert "Asynchronous Data Movement" in " ".join(h.snippet for h in hits[1:])  # the overview comes after
    assert ix.search("cp.async.bulk.tensor")[0].anchor.endswith("-cp-async-bulk-tensor")
    ld = ix.search("ld", kind="ptx")
    assert ld[0].anchor == "data-movement-and-conversion-instructions-ld" and ld[0].why == "definition"
    assert ix.search("cp.async.bulk", kind="code") == []
    # a heading that lists two instructions defines both; a special register is found with or without its %
    assert (
        ix.search("barrier")[0].anchor
        == ix.search("bar")[0].anchor
        == ("parallel-synchronization-and-communication-instructions-bar")
    )
    assert ix.search("%tid")[0].anchor == ix.search("tid")[0].anchor == "special-registers-tid"


PTX_FIXTURE = Path(__file__).parent / "fixtures" / "ptx" / "ptx-isa-structure.html"


@pytest.mark.parametrize(
    "query, anchor, notes",
    [
        (
            "cp.async.bulk.tensor",
            "data-movement-and-conversion-instructions-cp-async-bulk-tensor",
            [
                "Introduced in PTX ISA version 8.0.",
                "Requires sm_90 or higher.",
                "advised to be used with .target sm_90a",
            ],
        ),
        (
            "wgmma.mma_async",
            "asynchronous-warpgroup-level-matrix-instructions-wgmma-mma",
            ["Introduced in PTX ISA version 8.0.", "Target ISA Notes\nRequires sm_90a."],
        ),
        ("ld", "data-movement-and-conversion-instructions-ld", ["Type .b128 requires sm_70 or higher."]),
        ("mma", "warp-level-matrix-instructions-mma", ["Requires sm_70 or higher"]),
    ],
)
def test_on_the_ptx_isa_structure_each_instruction_ranks_its_own_section_first_with_its_isa_notes(
    ws, query, anchor, notes
):
    """The fixture reproduces the real page's markup (tests/fixtures/ptx/README.md: not a copy of it): nested
    ``<section>``s, numbered headings down to ``<h6>`` with ``<code>`` names, self links and empty headerlinks, rubrics,
    highlight blocks, a sidebar table of contents naming every instruction, and parent sections that name the
    instruction more often than its own section does."""
    assert cli(["--workspace", str(ws), "add-docs", str(PTX_FIXTURE)]) == 0
    ix = ContextIndex.for_workspace(ws)
    hits = ix.search(query, n=5)
    first = hits[0]
    assert (first.anchor, first.why, first.kind, first.sym_kind, first.symbol) == (
        anchor,
        "definition",
        "ptx",
        "instruction",
        query,
    )
    assert first.cite.startswith("context/docs/ptx-isa-structure.html:")
    assert ix.search(query, kind="ptx")[0].anchor == anchor
    (body,) = ix.con.execute("SELECT body FROM chunks WHERE anchor=?", (anchor,)).fetchone()
    for rubric in ("Syntax", "Description", "PTX ISA Notes", "Target ISA Notes"):
        assert f"\n{rubric}\n" in body, rubric
    for note in notes:
        assert note in body, note
    assert "Permalink" not in body and "toctree" not in body


def test_a_sass_or_ptx_line_finds_its_isa_section_on_the_ptx_isa_structure(ws):
    from ktui.context.isa import isa_query

    assert cli(["--workspace", str(ws), "add-docs", str(PTX_FIXTURE)]) == 0
    ix = ContextIndex.for_workspace(ws)
    for line, anchor in [
        (
            "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;",
            "asynchronous-warpgroup-level-matrix-instructions-wgmma-mma",
        ),
        ("UTMALDG.2D [UR8], [UR4] ;", "data-movement-and-conversion-instructions-cp-async-bulk-tensor"),
        ("@P0 LDG.E.128 R4, [R2.64] ;", "data-movement-and-conversion-instructions-ld"),
        ("HMMA.16816.F32.BF16 R4, R8, R12, R4 ;", "warp-level-matrix-instructions-mma"),
        (
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {...};",
            "asynchronous-warpgroup-level-matrix-instructions-wgmma-mma",
        ),
    ]:
        assert ix.search(isa_query(line), kind="ptx")[0].anchor == anchor, line
    # a heading naming two instructions at once defines both
    assert ix.search("mma.sp::ordered_metadata")[0].anchor == "warp-level-matrix-instructions-sparse-mma"


def test_a_short_token_is_found_by_the_word_index(ws, repo):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    ix = _index(ws)
    assert ix._tri_expr(["ld"]) == ""  # a trigram cannot match two characters
    hits = ix.search("ld", kind="docs")
    assert [h.cite for h in hits] == ["context/minicute/docs/layout.md:7#loads"]
    assert hits[0].why == "text" and "ld.global.nc" in hits[0].snippet
    # and the trigram index finds a part of a name that the word index keeps whole
    assert ix._word_expr(["ocal_til"]) and not ix._fts("fts_word", '"ocal_til"', None, 5)
    assert ix.search("ocal_til")[0].path.endswith(".py")


def test_reindex_is_incremental_by_file_hash(ws, repo):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    ix = _index(ws)
    n_files = ix.con.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    again = ix.update()
    assert again.chunked == 0 and again.unchanged == again.seen == n_files
    # one file changed, one touched (same bytes, new mtime), one removed, one added
    (repo / "cute" / "caller.py").write_text(CALLER_PY + "\n\ndef tile_more(t):\n    return local_tile(t, 1, 2)\n")
    os.utime(repo / "examples" / "gemm.py", ns=(1, 1))
    (repo / "docs" / "layout.md").unlink()
    (repo / "cute" / "atom.py").write_text("def make_tiled_copy(atom):\n    return atom\n")
    st = ix.update()
    assert (st.chunked, st.removed, st.unchanged) == (2, 1, n_files - 2)
    assert ix.search("tile_more")[0].cite == "context/minicute/cute/caller.py:11"
    assert ix.search("make_tiled_copy")[0].cite == "context/minicute/cute/atom.py:1"
    assert ix.search("Use ld.global.nc") == []
    assert ix.con.execute("SELECT COUNT(*) FROM files WHERE path='docs/layout.md'").fetchone()[0] == 0
    # the chunks of the removed file left both full-text tables (external content kept in step)
    assert ix._fts("fts_word", '"Stores"', None, 5) == [] and ix._fts("fts_tri", '"st.global"', None, 5) == []


def test_a_file_that_fails_to_parse_is_reported_and_the_rest_is_indexed(ws, repo, capsys):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    ix = _index(ws)
    assert ix.failures() == [
        ("context/minicute/cute/broken.py", "Python syntax error at line 1: invalid syntax (<unknown>, line 1)")
    ]
    assert ix.search("local_tile")[0].why == "definition"
    assert cli(["--workspace", str(ws), "list", "--json"]) == 0
    listed = data_of(capsys.readouterr().out, "context list")
    row = next(r for r in listed["sources"] if r["name"] == "minicute")
    assert row["failed"] == 1 and row["files"] == 5 and row["skipped"] == 2
    assert listed["failed"][0][0] == "context/minicute/cute/broken.py"


def test_search_json_output_shape(ws, repo, capsys):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    assert cli(["--workspace", str(ws), "search", "local_tile", "--json", "-n", "3"]) == 0
    out = data_of(capsys.readouterr().out, "context search")
    assert out["query"] == "local_tile" and out["kind"] is None and len(out["hits"]) == 3
    h = out["hits"][0]
    assert set(h) == {"cite", "path", "line", "end", "anchor", "kind", "symbol", "sym_kind", "why", "score", "snippet"}
    assert (h["cite"], h["kind"], h["symbol"], h["sym_kind"], h["why"]) == (
        "context/minicute/cute/core.py:8",
        "code",
        "local_tile",
        "function",
        "definition",
    )
    assert cli(["--workspace", str(ws), "search", "layout", "--kind", "docs", "--json"]) == 0
    assert {x["kind"] for x in data_of(capsys.readouterr().out, "context search")["hits"]} == {"docs"}


def test_a_kind_with_nothing_indexed_says_so_and_how_to_add_a_source(ws, repo, tmp_path, capsys):
    """context/README.md's example, ``search "cp.async.bulk" --kind ptx``, before any PTX ISA was added: no hit, and
    a line that says nothing of kind ptx is indexed and how to add the ISA (``--json``: ``notes``); once it is
    added, a query it lacks is a plain no hit."""
    from ktui.context.cli import parser

    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    assert cli(["--workspace", str(ws), "search", "cp.async.bulk", "--kind", "ptx"]) == 0
    out = capsys.readouterr().out.splitlines()
    hint = (
        "nothing of kind ptx is indexed (no PTX ISA document was added): save NVIDIA's one-page PTX ISA "
        '(docs.nvidia.com/cuda/parallel-thread-execution/index.html, "Save page as") and add it: '
        "ktui context add-docs ptx-isa.html"
    )
    assert out == ["(no hit for 'cp.async.bulk')", hint]
    assert cli(["--workspace", str(ws), "search", "cp.async.bulk", "--kind", "ptx", "--json"]) == 0
    data = data_of(capsys.readouterr().out, "context search")
    assert (data["hits"], data["notes"][:1]) == ([], [hint])
    assert cli(["--workspace", str(ws), "search", "nosuchnamezz", "--kind", "code"]) == 0
    assert capsys.readouterr().out.splitlines() == ["(no hit for 'nosuchnamezz')"]  # code is indexed: no hint
    page = tmp_path / "ptx-isa.html"
    page.write_text(ptx_page())
    assert cli(["--workspace", str(ws), "add-docs", str(page)]) == 0
    capsys.readouterr()
    assert cli(["--workspace", str(ws), "search", "nosuchnamezz", "--kind", "ptx"]) == 0
    assert capsys.readouterr().out.splitlines() == ["(no hit for 'nosuchnamezz')"]
    assert cli(["--workspace", str(ws), "search", "cp.async.bulk", "--kind", "ptx"]) == 0
    assert capsys.readouterr().out.startswith("1. context/docs/ptx-isa.html:")
    search = parser()._subparsers._group_actions[0].choices["search"]
    helps = {a.dest: a.help for a in search._actions}
    assert "ptx: the PTX ISA, one hit per instruction" in helps["kind"] and "not a regex" in helps["query"]


def test_the_workspace_its_dumps_and_packages_are_sources(ws, tmp_path, monkeypatch):
    d = ws / ".ktui" / "dumps" / "softmax" / "v1-abc"
    d.mkdir(parents=True)
    (d / "0-softmax_kernel.ptx").write_text(".version 8.5\n.visible .entry softmax_kernel(\n)\n{\nret;\n}\n")
    (d / "0-softmax_kernel.cubin").write_bytes(b"\x7fELF\x00")
    pkg = tmp_path / "site" / "fakepkg"
    (pkg / "lang").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lang" / "core.py").write_text('def program_id(axis):\n    """The program id."""\n    return axis\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("KTUI_CONTEXT_PACKAGES", "fakepkg,not_installed_pkg")
    (ws / "context").mkdir()
    (ws / "context" / "README.md").write_text("# context/\n\nThe placeholder: not indexed.\n")
    (ws / "context" / "tma-notes.md").write_text("# TMA notes\n\nmulticast needs a cluster.\n")
    ix = _index(ws)
    names = {s["name"] for s in ix.source_stats()}
    assert names == {"context/", "references", "kernels", "dumps", "package:fakepkg"}
    assert [h.cite for h in ix.search("multicast")] == ["context/tma-notes.md:3#tma-notes"]
    assert ix.search("placeholder") == []
    assert "fakepkg" not in sys.modules  # found on disk, never imported
    assert ix.search("program_id")[0].cite == "fakepkg:lang/core.py:1"
    assert ix.search("softmax_kernel", kind="dumps")[0].cite == ".ktui/dumps/softmax/v1-abc/0-softmax_kernel.ptx:2"
    assert ix.search("ref_kernel")[0].cite == "references/softmax.py:1"
    assert I.resolve_citation(ws, "fakepkg:lang/core.py") == (pkg / "lang" / "core.py").resolve()
    assert I.resolve_citation(ws, "fakepkg:../../etc/passwd") is None
    assert I.resolve_citation(ws, "os:path.py") is None  # not a context package


def test_remove_deletes_what_add_made_and_only_that(ws, repo, tmp_path, capsys):
    assert cli(["--workspace", str(ws), "add", str(repo), "--name", "linked"]) == 0
    assert cli(["--workspace", str(ws), "add", f"file://{repo}", "--name", "cloned"]) == 0
    (ws / "context" / "mine").mkdir()
    (ws / "context" / "mine" / "notes.md").write_text("# Notes\n")
    assert cli(["--workspace", str(ws), "remove", "linked"]) == 0
    assert not (ws / "context" / "linked").exists() and (repo / "cute" / "core.py").is_file()  # the target stays
    assert cli(["--workspace", str(ws), "remove", "cloned"]) == 0
    assert not (ws / "context" / "cloned").exists()
    with pytest.raises(ContextError, match="'mine' was not added by `ktui context add`"):
        cli(["--workspace", str(ws), "remove", "mine"])
    ix = _index(ws)
    assert ix.search("local_tile") == []
    assert ix.search("Notes")[0].cite == "context/mine/notes.md:1#notes"
    with pytest.raises(ContextError, match="exists already"):
        cli(["--workspace", str(ws), "add", str(repo), "--name", "mine"])
    with pytest.raises(ContextError, match="git clone .* failed"):
        cli(["--workspace", str(ws), "add", f"file://{tmp_path}/no-such-repo"])


def test_ktui_context_search_end_to_end(ws, repo):
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    env = {**os.environ, "KTUI_CONTEXT_PACKAGES": ""}
    out = subprocess.run(
        [sys.executable, "-m", "ktui", "context", "--workspace", str(ws), "search", "local_tile"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ws,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "1. context/minicute/cute/core.py:8  [code function local_tile]  (definition)"
    assert "building the context index (first use" in out.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "ktui", "context", "--workspace", str(ws), "remove", "nothing"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("ktui: error: 'nothing' was not added")


def test_the_agent_tool_returns_citations_and_read_file_opens_them(ws, repo, tmp_path, monkeypatch):
    from ktui.agent.tools import ToolError, Workbench
    from ktui.core.workspace import Workspace

    pkg = tmp_path / "site" / "fakepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "atom.py").write_text("import x\n\n\ndef make_tiled_copy(atom, thr, val):\n    return atom\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("KTUI_CONTEXT_PACKAGES", "fakepkg")
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    wb = Workbench(Workspace(ws))
    out = wb.search_context("local_tile")
    assert out.splitlines()[0] == "1. context/minicute/cute/core.py:8  [code function local_tile]  (definition)"
    assert out.splitlines()[1] == "     def local_tile(tensor, tiler, coord):"
    assert out.endswith("(cite what you use as path:line)")
    pk = wb.search_context("make_tiled_copy")
    assert pk.splitlines()[0].startswith("1. fakepkg:atom.py:4  [code function make_tiled_copy]")
    # a hit outside the workspace opens read-only, from its cited line
    assert wb.read_file("fakepkg:atom.py:4").splitlines()[0] == "def make_tiled_copy(atom, thr, val):"
    assert wb.read_file("context/minicute/cute/core.py", 8, 8) == "def local_tile(tensor, tiler, coord):"
    with pytest.raises(ToolError, match="outside the workspace"):
        wb.read_file("../minicute/cute/core.py")
    with pytest.raises(ToolError, match="outside the workspace"):
        wb.resolve("context/minicute/cute/core.py")  # writes keep the sandbox: the link leads out
    # a kernel written after the first search is found by the next one (the workspace is updated on each call)
    (ws / "kernels" / "softmax" / "v2.py").write_text("def custom_kernel(data):\n    return fused_softmax(data)\n")
    assert "kernels/softmax/v2.py:2" in wb.search_context("fused_softmax")
    assert wb.search_context("kind:docs Layouts").splitlines()[0].startswith("1. context/minicute/docs/layout.md:1")
    with pytest.raises(ToolError, match="unknown kind"):
        wb.search_context("kind:bogus x")


def test_the_context_package_imports_neither_textual_nor_torch_nor_triton():
    code = "import ktui.context.index, ktui.context.cli, ktui.context.chunk, sys; print(' '.join(sys.modules))"
    mods = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert "ktui.context.index" in mods
    assert not mods & {"textual", "torch", "triton", "numpy", "litellm", "cutlass"}


def test_sqlite_has_fts5_and_trigram():
    """ktui's Python must have both (SQLite >= 3.34); without trigram the index says so in ``notes``."""
    assert I.fts5_support() == (True, True)


def test_two_updaters_at_once_index_each_file_once(ws, repo):
    """The agent's first search and the TUI's panel may build the index together: one waits for the other."""
    import threading

    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    results: list[object] = []
    go = threading.Barrier(2)

    def build() -> None:
        go.wait()  # both open the (not yet created) index at once: one makes the schema, neither deletes it
        ix = ContextIndex.for_workspace(ws)
        try:
            results.append(ix.update())
        except Exception as exc:  # the assertion below names it
            results.append(exc)
        finally:
            ix.close()

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, I.UpdateStats) for r in results), results
    assert sorted(r.chunked for r in results) == [0, 7]  # type: ignore[union-attr]
    ix = ContextIndex.for_workspace(ws)
    dup = ix.con.execute("SELECT COUNT(*) FROM chunks GROUP BY file_id, start, symbol HAVING COUNT(*) > 1").fetchall()
    assert dup == []


def test_without_trigram_the_word_index_answers_and_says_so(ws, repo, monkeypatch):
    monkeypatch.setattr(I, "fts5_support", lambda: (True, False))
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    ix = _index(ws)
    assert not ix.trigram and "no trigram tokenizer" in ix.notes[0]
    assert ix.con.execute("SELECT name FROM sqlite_master WHERE name='fts_tri'").fetchone() is None
    assert ix.search("local_tile")[0].cite == "context/minicute/cute/core.py:8"
    assert ix.search("ld", kind="docs")[0].cite == "context/minicute/docs/layout.md:7#loads"
    assert ix.search("ocal_til") == []  # a part of a name needs the trigram table


def test_what_context_add_puts_in_context_is_git_ignored():
    root = Path(__file__).resolve().parents[1]
    ignored = subprocess.run(["git", "check-ignore", "-q", "context/cutlass/include/x.hpp"], cwd=root)
    kept = subprocess.run(["git", "check-ignore", "-q", "context/README.md"], cwd=root)
    assert (ignored.returncode, kept.returncode) == (0, 1)
