"""What requests and replies of both roles share: the snapshots a request names, correctness cases (the calls of a
burst too), output leaves and timing statistics."""

from typing import Any, Literal, NotRequired, TypedDict

Spec = dict[str, Any]  # one test or benchmark spec: keyword arguments of the reference's generate_input


class KernelSource(TypedDict):
    """The snapshot of the kernel version a request is about (the ``kernel`` param)."""

    name: str  # workspace-relative path, for messages: ``kernels/softmax/v2.py``
    path: str  # absolute path of the snapshot file the worker imports
    sha: str  # sha256 (hex) of the snapshot's content; the module is imported under a name made from it
    search_dir: str  # the folder the version was snapshotted from, on sys.path while it imports ('' for none)


class ReferenceSource(TypedDict):
    """The snapshot of the problem's reference module (the ``reference`` param)."""

    problem: str  # the problem name: ``softmax``
    path: str  # absolute path of the snapshot file
    sha: str  # sha256 (hex) of the snapshot; the worker refuses a file whose content no longer matches
    search_dir: str  # the folder of ``references/``, on sys.path while it imports


class Sources(TypedDict):
    """The two snapshots that nearly every request names."""

    kernel: KernelSource
    reference: ReferenceSource


class Case(TypedDict):
    """One correctness case: a test spec, a seed and how its inputs are made (``ktui.worker.cases``)."""

    spec_index: int  # into ``ProblemInfo.tests``
    seed: int
    first: NotRequired[bool]  # one of the leading cases the first verdict judges (``core.ladder.cases.first_sweep``)
    repeat: NotRequired[int]  # 2: call twice on identical inputs (nondeterminism)
    fill: NotRequired[Literal["decoy"]]  # memory the kernel allocates holds decoy values instead of the poison
    dist: NotRequired[str]  # an input distribution other than ``native``
    # the inputs, by path (``[3]``), a special distribution refills where it refills some only
    # (``ProblemInfo.distribution_inputs``)
    inputs: NotRequired[list[str]]
    layout: NotRequired[str]  # a non-contiguous input layout (transposed, padded, offset, expanded)
    # pin autotune configs: each autotuned kernel launches (config + its own shift) modulo its number of configs
    # (``ktui.worker.capture.pinned_config``); "auto": nothing pinned, the autotuner chooses
    config: NotRequired[int | Literal["auto"]]
    fresh: NotRequired[bool]  # import the kernel afresh before this case (a second phase)
    spec: NotRequired[Spec]  # a fuzzed spec (``ProblemInfo.fuzzed``): used instead of ``tests[spec_index]``
    near_dup: NotRequired[bool]  # the inputs of the same spec and seed with a few interior elements swapped
    calls: NotRequired[int]  # the burst: this many calls in a row, each on fresh inputs
    # ``scalars``: Python int, bool and float arguments moved, by path: ``{"[1]": "+1"}`` (``cases.move_ints``)
    vary: NotRequired[dict[str, str]]
    # how real use calls: under ``torch.no_grad()``, under ``torch.inference_mode()`` (the inputs made in it too:
    # inference tensors), or with the inputs ``generate_input`` made requiring grad as it made them
    # (``ktui.worker.grad_modes``)
    grad: NotRequired[Literal["no_grad", "inference", "requires_grad"]]
    # on a ``requires_grad`` case: which of the inputs ``generate_input`` made requiring grad (by index, in sorted path
    # order) stays frozen, as a training step with that parameter frozen calls the kernel (a backward branching on
    # ``ctx.needs_input_grad``: red team round 32, #4); none where fewer than two inputs require grad
    frozen: NotRequired[int]


OutputLeaf = TypedDict(
    "OutputLeaf",
    {  # the functional form: ``class`` is a keyword
        "path": str,  # where the leaf sits in the output: '' for a lone tensor, ``[1]``, ``['o']``
        "kind": Literal["tensor", "number", "other"],
        "dtype": str,  # torch's name without ``torch.``
        "shape": list[int],
        "stride": list[int],
        "device": str,
        "file": str,  # the tensor's raw bytes, relative to the case's folder under ``out_dir``
        "class": str,  # ``torch.Tensor`` unless a subclass
        "value": Any,  # a number's value
        "type": str,  # the Python type's name (numbers and other leaves)
        "repr": str,  # other leaves: '' (ktui never calls a returned object's ``__repr__``: it is the kernel's code)
        "unsent": str,  # why the tensor's bytes were not written (its metadata differs from the reference's)
        "hint": bool,  # an expected leaf borrowed from another case of the spec: a size bound, not the truth
        # what of the tensor a caller trips on (``ktui.worker.tensors.OUTPUT_FLAGS``: ``inference``,
        # ``requires_grad``, ``conj``, ``neg``): absent when none
        "flags": list[str],
    },
    total=False,
)
OutputLeaf.__doc__ = """One leaf of a returned output (``ktui.worker.tensors.save_outputs``, ``describe``)."""


class Container(TypedDict):
    """One container of a returned output (``ktui.worker.structure``): its path (as the leaves' paths), kind
    (``tuple``, ``list``, ``dict``, ``namedtuple``), class name and keys (dict keys as in paths, a named tuple's
    fields, or for a tuple and a list its length as one string)."""

    path: str
    kind: Literal["tuple", "list", "dict", "namedtuple", "dataclass"]
    name: str
    keys: list[str]


class CallRecord(TypedDict, total=False):
    """One call of a burst case (``Case.calls``), as ``ExecutedCase`` records a case's single call: its inputs'
    ``seed`` (the case's seed + the call's index), its folder ``dir`` inside the case's folder, and ``reused`` when
    its output lies in the storage of an earlier call's output that the caller still holds (the message)."""

    seed: int
    dir: str
    seconds: float
    input_hash_before: str
    input_hash_after: str
    inputs_after: list[OutputLeaf]
    inputs_replaced: list[str]  # as ``ExecutedCase``'s
    inputs_repointed: list[str]  # as ``ExecutedCase``'s
    outputs: list[OutputLeaf]
    inplace_outputs: list[OutputLeaf]  # the declared in-place inputs as the call left them (``ExecutedCase``)
    structure: list[Container]
    aliases: list[str]
    shared_outputs: list[str]  # as ``ExecutedCase``'s
    buffer_leaves: dict[str, int]
    changed_after: bool
    inputs_changed_after: bool
    reused: str
    generators_after: dict[str, str]  # as ``ExecutedCase``'s


class ExecutedCase(Case, total=False):
    """A case after the candidate called the kernel on it (the ``execute`` reply; ``compare`` takes these)."""

    frozen_path: str  # the input its ``frozen`` index kept frozen (``grad_modes.frozen_path``), for its label
    seconds: float  # the call's wall time, synchronized
    input_hash_before: str  # ``tensors.hash_data`` of the inputs before the call (the judge compares its own)
    input_hash_after: str  # and after: they differ when the kernel wrote into its inputs (a hint: see inputs_after)
    # each ``torch.Generator`` input's state after the call (``tensors.generator_states``: path -> digest); the judge
    # compares the reference's after its own call (a draw from a copy leaves the caller's where it was)
    generators_after: dict[str, str]
    # The inputs as the call left them (``tensors.save_inputs``: files ``in<i>.bin``): the judge compares their
    # bytes with the inputs it builds itself, which decides whether an input changed (the hashes are hints)
    inputs_after: list[OutputLeaf]
    # paths of input leaves that the call replaced (a dataclass field, a list or dict entry pointed at another tensor
    # or value): a hint that can fail a case; the inputs' bytes above are the caller's original objects'
    inputs_replaced: list[str]
    # input tensors the call left viewing other memory, or the same memory otherwise (``tensors.repointed_leaves``:
    # ``in[0] (strides (136, 1) -> (129, 1))``): fails the case
    inputs_repointed: list[str]
    outputs: list[OutputLeaf]
    structure: list[Container]  # the output's containers (``ktui.worker.structure``): types and keys must match
    aliases: list[str]  # ``out[0] aliases in[1]``: outputs sharing storage with an input
    # ``out aliases in[0]``: outputs sharing storage with a declared in-place input (which ``aliases`` leaves out:
    # ``inputs_only``); such an output keeps the caller's layout (``compare.judge_leaf``)
    inplace_aliases: list[str]
    # ``out[1] shares memory with out[0]``: two outputs with an element in common (``tensors.shared_outputs``); fails
    # where the reference's outputs do not share it (``prep["shared_outputs"]``)
    shared_outputs: list[str]
    # output leaf path -> the index (in the reference's ``outputs``) of the declared output buffer it is
    # (``tensors.buffer_leaves``): the judge requires the leaves the reference returns as its buffers to be them
    buffer_leaves: dict[str, int]
    # the declared in-place inputs (the reference's ``inplace``) as the call left them, judged as outputs: leaves of
    # ``{key: tensor}`` (paths ``out[0]``, ``out['x']``) in the case's folder ``inplace/``
    inplace_outputs: list[OutputLeaf]
    # on a ``requires_grad`` case, the gradients of the inputs that require grad (``problem.grad_paths``, sorted) by
    # the version's backward against seeded cotangents (``worker.grad_modes.input_grads``), judged as outputs: paths
    # ``out[0]``, ``out[1]``... in the case's folder ``grad/``
    grad_outputs: list[OutputLeaf]
    repeat_outputs: list[OutputLeaf]  # the second call's outputs (``repeat: 2``)
    repeat_dir: str  # their folder inside the case's folder
    changed_after: bool  # an output changed after its call returned
    grads_changed_after: bool  # a gradient its backward returned changed later (another backward wrote it)
    inputs_changed_after: bool  # its inputs changed after the call returned and was checked (a thread, a later call)
    unsupported: str  # the layout raised: ``Type: message`` (not a failure)
    # the config each autotuned kernel launched, by kernel name: index into its ``configs`` (``capture.configs_ran``;
    # -1: the autotuner chose one outside the list); shown in the case's name (``config=add:1,reduce:0``)
    configs: dict[str, int]
    tampered: list[str]  # ktui's own worker functions found patched right after this case (``integrity.tampered``)
    launches: dict[str, int]  # Triton/CuTeDSL launches the calls made: ``ObservedLaunch`` key -> number of launches
    # the launches of a training op's backward (``autograd.grad`` in a ``grad=requires_grad`` case): compiled and
    # dumped with the call's own, never counted as the call's (a torch forward with a Triton backward times torch)
    backward_launches: dict[str, int]
    calls_out: list[CallRecord]  # the burst (``calls``): each call's record, in order


class TimingStats(TypedDict):
    """Per-call times of one timed spec (``ktui.worker.timing.summarize``), in microseconds."""

    median_us: float
    p25_us: float
    p75_us: float
    iqr_us: float
    min_us: float
    max_us: float
    mean_us: float
    reps: int


# Which calls' kept outputs: ``bench`` the event-timed calls of a benchmark spec, ``host`` the host loop's, ``stretch``
# the verified stretch of untimed calls on a test spec (the CPU, where nothing is timed)
TimedSource = Literal["bench", "host", "stretch"]


class TimedOutput(TypedDict):
    """One kept timed call's output as the candidate wrote it (``tensors.save_outputs``) in the folder ``dir`` under
    the request's ``out_dir``: the ``bench_outputs`` reply, the ``check_timed`` request."""

    call: int  # its place among the timed calls, from 1
    seed: int  # the seed of its inputs
    dir: str
    outputs: list[OutputLeaf]
    structure: list[Container]
    # output leaf path -> the declared output buffer it is (``tensors.buffer_leaves``), as ``ExecutedCase``'s: the
    # judge requires the leaves the reference returns as its buffers to be them on timed calls too
    buffer_leaves: NotRequired[dict[str, int]]
