"""Mark regions of a kernel for ktui's ``trace`` rung: no-ops unless the trace rung compiles the kernel.

Triton::

    import ktui.trace.triton as kt

    @triton.jit
    def matmul_kernel(...):
        ...
        with kt.region("mainloop"):
            for k in range(...):
                acc = tl.dot(a, b, acc)
        with kt.region("epilogue"):
            tl.store(...)

``kt.begin("name")`` / ``kt.end("name")`` mark the same thing without a block. CuTeDSL: ``import ktui.trace.cute
as kt``, the same three names, inside a ``@cute.kernel``.

Outside the trace rung's own process the markers emit no instruction at all (the build is the unmarked kernel's:
``tests/test_trace_device.py`` compares the SASS), and under the Triton interpreter they do nothing. In the trace
rung each marker reads the GPU's ``%globaltimer`` and the SM's ``%clock64``, and lane 0 of every warp stores a
16-byte record to a buffer ktui allocated (``ktui.protocol.trace``). A marker records when its warp *reaches* it: a
load issued in one region and first used in the next is charged to the next. At most 8 region names per kernel;
a marker inside a loop keeps its last iteration.

This package imports neither triton nor cutlass: ``ktui.trace.triton`` and ``ktui.trace.cute`` do.
"""
