"""Code ktui itself writes into a version file: the adapter that makes a KernelBench ``ModelNew`` a
``custom_kernel(data)`` (``ktui import modelnew``, ``ktui.importers.kernelbench.adapt_modelnew``). The source scan
(``ktui.core.inspect.scan.scan_source``) leaves out the findings on its lines when a version ends with it verbatim: its
``torch.func.functional_call`` is how ModelNew's own forward is called, not the version's torch fallback (new-user
trial 20, L11: "falls back to torch for _ktui_torch.func.functional_call (line 39)"). Changed by a single character,
it is the version's own code and scanned as such."""

from __future__ import annotations

MODELNEW_ADAPTER = '''

# ==== ktui adapter: a KernelBench ModelNew as custom_kernel(data) ====
import torch as _ktui_torch  # noqa: E402

_ktui_models = {}


def custom_kernel(data):
    """ModelNew(*init_inputs).forward(*inputs) with Model's weights (``state``) passed to it by name."""
    inputs, init_inputs, state = data
    device = next((t.device for t in (*inputs, *state.values()) if isinstance(t, _ktui_torch.Tensor)), "cpu")
    key = (repr(init_inputs), str(device))
    model = _ktui_models.get(key)
    if model is None:
        with _ktui_torch.no_grad(), _ktui_torch.device(device):
            model = _ktui_models[key] = ModelNew(*init_inputs)
    own = {k for k, _ in model.named_parameters()} | {k for k, _ in model.named_buffers()}
    if own - set(state):
        raise ValueError(
            f"ModelNew has parameters or buffers {sorted(own - set(state))} that Model has not "
            f"(Model's: {sorted(state)}): ktui passes Model's weights to ModelNew by name"
        )
    buffers = {k for k, _ in model.named_buffers()}
    weights = {k: (v.clone() if k in buffers else v) for k, v in state.items() if k in own}
    with _ktui_torch.no_grad():
        return _ktui_torch.func.functional_call(model, weights, tuple(inputs))
'''


def adapter_start(source: str) -> int | None:
    """The first line (1-based) of ``MODELNEW_ADAPTER`` where ``source`` ends with it verbatim (trailing blank lines
    aside), else None."""
    body = source.rstrip("\n") + "\n"
    tail = MODELNEW_ADAPTER.rstrip("\n") + "\n"
    if not body.endswith(tail):
        return None
    return body[: len(body) - len(tail)].count("\n") + 1 + (len(tail) - len(tail.lstrip("\n")))
