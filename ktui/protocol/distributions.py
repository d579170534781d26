"""The input distributions a correctness case can draw (a case's ``dist``), named once for both sides: the worker
offers exactly these (``ktui.worker.problem.DISTRIBUTIONS``, built by ``ktui.worker.cases`` and
``ktui.worker.special``) and the agent's prompt lists them from here (``ktui.agent.prompts``), so neither can name one
the other lacks.
"""

# name -> what the worker fills the floating inputs with (integer inputs: ``intrange`` and ``indices``), one line
# each. The first six are the ordinary distributions, then the special values of ``SPECIAL_DISTRIBUTIONS``.
INPUT_DISTRIBUTIONS: dict[str, str] = {
    "native": "the inputs exactly as generate_input makes them",
    "normal": "normal with a random mean in (-2, 2) and scale in 0.1..10",
    "uniform": "uniform, all positive (0.1..10 x U[0, 1))",
    "heavy": "heavy-tailed (Student's t, 2 degrees of freedom, clamped to +-1e4)",
    "shifted": "normal around +-100..200, the sign alternating by row: exp() overflows unless you subtract the max",
    "constant": "every element 1.0 (a long bf16 accumulation of ones stalls at 256)",
    "zeros": "exact zeros: a band of rows, 64x64 tiles, scattered elements",
    "masked": "masked rows: chunks of -inf, rows at -1e9",
    "large": "magnitudes past fp16's range",
    "extreme": "values near the dtype's max, subnormals, and rows of tiny values",
    "tiny": "extreme without the values near the max: subnormals, small normals and rows of tiny values, for an op "
    "whose own precision overflows on the max (a norm squares it: the extreme case is then not judged)",
    "nonfinite": "+-inf (NaN where the reference allows it)",
    "nan": "1% NaN among normal values, where the reference's float outputs stay free of NaN (a nansum, a "
    "nan_to_num, a where(isnan(x), ...)): a kernel that lets a NaN through fails",
    "intrange": "integer inputs over their dtype's whole range, bands of rows and columns near its top",
    "indices": "integer and bool inputs given other values in the range their own values span (ids permuted, "
    "sorted rows kept sorted, mask rows permuted)",
    "segments": "sorted integer rows of unequal steps (offsets, CSR row pointers, cu_seqlens) with a segment made "
    "empty: its length moved to the others, the ends and the longest length kept (an MoE expert with no tokens); "
    "a 0 in each row of positive integers (sequence lengths, counts)",
    "edges": "the float arguments' values (a histogram's bounds, a clamp's limits, a threshold) planted in the float "
    "inputs, a few elements each: a kernel that gets x == hi wrong fails",
    "scalars": "the Python number arguments: floats (a scale, an eps) times a random factor in 0.5..2, ints (an "
    "exponent, a k) moved by +1, -1 or x2 and bools flipped where the reference takes it, the tensors as made",
}
# The special values: drawn on a few specs each, only where the reference's output stays valid on them.
SPECIAL_DISTRIBUTIONS: tuple[str, ...] = (
    "zeros",
    "masked",
    "large",
    "extreme",
    "tiny",
    "nonfinite",
    "nan",
    "intrange",
    "indices",
    "segments",
    "edges",
    "scalars",
)


def distributions_for_prompt() -> str:
    """The distributions as the model reads them: a Markdown bullet per ordinary one (``- `shifted`: normal around
    ...``), then one bullet for the special values, which are drawn on a few specs where the reference stays
    valid."""
    ordinary = [f"  - `{n}`: {w}" for n, w in INPUT_DISTRIBUTIONS.items() if n not in SPECIAL_DISTRIBUTIONS]
    special = "; ".join(f"`{n}`: {INPUT_DISTRIBUTIONS[n]}" for n in SPECIAL_DISTRIBUTIONS)
    return "\n".join([*ordinary, f"  - special values, on a few specs where the reference stays valid: {special}"])
