"""Data flow over a kernel module's AST, for the static scan (``ktui.core.inspect.scan``).

The scan's name rules see ``torch.softmax(x)``; they do not see ``_f = torch.softmax`` called later, ``a + b`` on
tensors, ``operator.add``, ``vars(sys)["modules"]``, ``traceback.extract_stack`` or ``from torch.cuda import
Stream``. This module follows what each name is bound to, through imports (with aliases), assignments, tuple
unpacking, attribute chains, ``getattr``/``vars``/``__dict__`` with constant names, containers, comprehensions and
calls of the module's own functions (analysed with the arguments of each call, a few levels deep), and reports:

- ``torch-alias``: a torch function (or a tensor's compute method) called under a name the name rules do not read,
  whose result reaches ``custom_kernel``'s return value;
- ``torch-operator``: Python operators, ``operator.*`` functions and the ``sum``/``abs``/``pow``/``max``/``min``
  builtins applied to tensors, whose result reaches ``custom_kernel``'s return value (torch computes them);
- ``frame-walk``: the call stack or frames read (``traceback``/``inspect`` stack functions, ``sys._getframe``,
  ``f_back``/``f_locals``...), anywhere in the module;
- ``loaded-modules``: ``sys.modules`` reached other than by that literal name (``vars(sys)["modules"]``, an alias
  of sys, ``from sys import modules``), or every live object through ``gc`` under another name;
- ``stream-alias``: a stream API called under another name (``from torch.cuda import Stream, stream``);
- ``patch-alias``: an attribute of a module (or of a class or module reached from one) assigned or deleted through
  an alias, ``setattr``, ``vars(m)[k] = v``, or a module taken from ``sys.modules``.

Values are abstract (``Val``): the objects a name may be bound to, whether it is surely a tensor or comes from the
kernel's input data (a tensor or a scalar), and the torch computations it was made from. Arithmetic counts as torch
compute when an operand is surely a tensor, or both come from the input data. Tensor creation (``torch.empty``...),
views, shapes, strides and Triton launches (``kernel[grid](...)``) are not compute. Pure Python; runs in ktui's own
process.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from ktui.core.inspect.scan import (
    STREAM_NAMES,
    TENSOR_COMPUTE_METHODS,
    TORCH_ALLOWED,
    is_jit,
)

Site = tuple[int, str, str]  # (line, kind, text)

# The kinds this module reports, and the name rules' kinds that already cover a finding on the same line.
COVERED_BY = {
    "torch-alias": {"torch-op", "fallback"},
    "torch-operator": {"torch-op", "fallback"},
    "frame-walk": {"introspection"},
    "loaded-modules": {"introspection"},
    "stream-alias": {"stream"},
    "patch-alias": {"monkeypatch"},
}

BINOP_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
CMP_SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
UNARY_SYMBOLS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
# operator's functions that compute on tensors when given tensors
OPERATOR_COMPUTE = frozenset(
    "add sub mul truediv floordiv mod pow matmul neg pos abs and_ or_ xor invert inv lshift rshift lt le "
    "eq ne ge gt concat".split()
) | {f"i{n}" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")}
BUILTIN_COMPUTE = {"sum", "abs", "pow", "divmod", "round", "max", "min"}
DUNDER_COMPUTE = {
    f"__{n}__"
    for base in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift")
    for n in (base, f"r{base}", f"i{base}")
} | {"__neg__", "__pos__", "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
# Tensor methods and attributes that give numbers or metadata, not tensors
SCALAR_METHODS = frozenset(
    "size stride numel nelement dim ndimension element_size data_ptr is_contiguous is_floating_point "
    "is_complex is_signed item tolist storage_offset get_device untyped_storage __len__ __index__ "
    "__format__ __repr__ __str__".split()
)
SCALAR_ATTRS = frozenset(
    "shape ndim dtype device is_cuda is_cpu layout requires_grad names itemsize nbytes is_sparse "
    "is_quantized is_meta".split()
)
VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag", "data"}
INPLACE_WRITES = {"copy_", "fill_", "zero_", "index_put_", "set_", "put_", "index_copy_", "index_fill_"}
FRAME_ATTRS = {"f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
FRAME_FUNCS = {
    "inspect.stack",
    "inspect.currentframe",
    "inspect.getouterframes",
    "inspect.getinnerframes",
    "inspect.trace",
    "inspect.getframeinfo",
    "traceback.extract_stack",
    "traceback.format_stack",
    "traceback.print_stack",
    "traceback.walk_stack",
    "traceback.StackSummary.extract",
    "sys._getframe",
    "sys._getframemodulename",
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "sys.call_tracing",
    "threading.settrace",
    "threading.setprofile",
}
GC_WALKS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
KNOWN_MODULES = {"sys", "inspect", "traceback", "gc", "operator", "importlib", "builtins", "functools", "torch"}
MAX_DEPTH = 8  # calls of the module's own functions followed, nested
MAX_STEPS = 200_000  # expressions evaluated in all: a pathological module is cut off, not hung on


@dataclass(frozen=True)
class Val:
    """What an expression may evaluate to.

    ``refs``: the objects it may be, by name: a module or an attribute path under one (``torch``, ``torch.softmax``,
    ``sys.modules``), ``method:NAME`` (a tensor's bound method), ``fn:N`` (the module's own function number N),
    ``loaded:NAME`` (a module taken from ``sys.modules``), ``methodcaller:NAME``. ``tensor``: surely a tensor
    (torch made it). ``maybe``: comes from the kernel's input data (a tensor or a scalar). ``taint``: torch
    computations it was made from. ``silent``: the name rules already report it (``from torch import softmax``).
    ``owner``: for a bound method, the name of the variable it is bound to (in-place writes taint that variable).
    """

    refs: frozenset[str] = frozenset()
    tensor: bool = False
    maybe: bool = False
    taint: frozenset[Site] = frozenset()
    silent: bool = False
    owner: str = ""

    def join(self, other: Val) -> Val:
        """Either value (a branch merge, a container's elements)."""
        return Val(
            self.refs | other.refs,
            self.tensor or other.tensor,
            self.maybe or other.maybe,
            self.taint | other.taint,
            self.silent and other.silent,
            self.owner or other.owner,
        )


NOTHING = Val()


def join_all(vals: list[Val]) -> Val:
    """The join of ``vals`` (``NOTHING`` for none)."""
    out = NOTHING
    for v in vals:
        out = out.join(v)
    return out


Env = dict[str, Val]


class _Budget(Exception):
    """MAX_STEPS reached."""


@dataclass
class _Fn:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    env: Env  # the scope it was defined in
    name: str
    torch_decorator: str = ""  # ``torch.compile``: calling it is torch


@dataclass
class Flow:
    """One module's analysis: ``run(tree)`` then ``findings`` (line, kind, text)."""

    events: set[Site] = field(default_factory=set)
    reached: set[Site] = field(default_factory=set)  # torch compute reaching custom_kernel's return value
    fns: list[_Fn] = field(default_factory=list)
    modules: set[str] = field(default_factory=set)  # every module path an import binds
    own_ops: set[str] = field(default_factory=set)  # ``ns::name`` the module registers (``scan.registered_ops``)
    steps: int = 0
    _stack: list[int] = field(default_factory=list)
    _returns: list[list[Val]] = field(default_factory=list)
    _analysed: set[int] = field(default_factory=set)

    # -- entry points ----------------------------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> list[Site]:
        """Analyse the module: its top level, every function body once (for frame walks, loaded modules, streams
        and patches anywhere), then ``custom_kernel`` on input data (for torch compute reaching its return)."""
        env: Env = {}
        try:
            self.exec_block(tree.body, env, global_pass=True)
            for fn in self.fns:  # module-level functions see the module's final globals
                if fn.env is _MODULE:
                    fn.env = env
            for i in range(len(self.fns)):
                self._analyse_alone(i)
            entry = env.get("custom_kernel")
            for ref in sorted(entry.refs if entry else ()):
                if ref.startswith("fn:"):
                    ret = self.call_fn(int(ref[3:]), [Val(maybe=True)], {})
                    self.reached |= ret.taint
        except (_Budget, RecursionError):
            pass
        return sorted(self.events | self.reached)

    def _analyse_alone(self, i: int) -> None:
        """Analyse function ``i`` once with every parameter from the input data (its events only)."""
        if i in self._analysed:
            return
        self._analysed.add(i)
        fn = self.fns[i]
        env = dict(fn.env)
        for name in _param_names(fn.node):
            env[name] = Val(maybe=True)
        self._returns.append([])
        self._stack.append(i)
        try:
            if isinstance(fn.node, ast.Lambda):
                self.eval(fn.node.body, env)
            else:
                self.exec_block(fn.node.body, env, global_pass=True)
        finally:
            self._stack.pop()
            self._returns.pop()

    # -- statements ------------------------------------------------------------------------------------------------
    def exec_block(self, body: list[ast.stmt], env: Env, global_pass: bool = False) -> Env:
        """Run ``body`` on ``env`` (updated in place, also returned); branches are merged."""
        for stmt in body:
            self.exec_stmt(stmt, env, global_pass)
        return env

    def _branches(self, blocks: list[list[ast.stmt]], env: Env, global_pass: bool) -> None:
        outs = [self.exec_block(b, dict(env), global_pass) for b in blocks]
        merged: Env = {}
        for out in outs:
            for k, v in out.items():
                merged[k] = merged[k].join(v) if k in merged else v
        env.clear()
        env.update(merged)

    def exec_stmt(self, s: ast.stmt, env: Env, global_pass: bool) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[s.name] = self._define(s, env, global_pass)
        elif isinstance(s, ast.ClassDef):
            for d in s.decorator_list:
                self.eval(d, env)
            self.exec_block(s.body, dict(env), global_pass)
            env[s.name] = NOTHING
        elif isinstance(s, ast.Import):
            for a in s.names:
                self.modules.add(a.name)
                if a.asname:
                    env[a.asname] = Val(frozenset({a.name}))
                else:
                    root = a.name.split(".")[0]
                    self.modules.add(root)
                    env[root] = Val(frozenset({root}))
        elif isinstance(s, ast.ImportFrom):
            self._import_from(s, env)
        elif isinstance(s, ast.Assign):
            v = self.eval(s.value, env)
            for t in s.targets:
                self.assign(t, v, env, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.eval(s.value, env), env, s.value)
        elif isinstance(s, ast.AugAssign):
            self._aug_assign(s, env)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Attribute):
                    self._patch(t.value, t.attr, env, t, "deletes")
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env)
        elif isinstance(s, ast.Return):
            v = self.eval(s.value, env) if s.value is not None else NOTHING
            if self._returns:
                self._returns[-1].append(v)
        elif isinstance(s, ast.If):
            self.eval(s.test, env)
            self._branches([s.body, s.orelse], env, global_pass)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.assign(s.target, self.element(self.eval(s.iter, env)), env, None)
            for _ in range(2):  # twice: what one iteration binds reaches the next
                self._branches([s.body, []], env, global_pass)
            self._branches([s.orelse, []], env, global_pass)
        elif isinstance(s, ast.While):
            for _ in range(2):
                self.eval(s.test, env)
                self._branches([s.body, []], env, global_pass)
            self._branches([s.orelse, []], env, global_pass)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                v = self.eval(item.context_expr, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, NOTHING if not (v.tensor or v.maybe) else v, env, None)
            self.exec_block(s.body, env, global_pass)
        elif isinstance(s, (ast.Try, ast.TryStar)):
            self.exec_block(s.body, env, global_pass)
            blocks = []
            for h in s.handlers:
                if h.type is not None:
                    self.eval(h.type, env)
                if h.name:
                    env[h.name] = NOTHING
                blocks.append(h.body)
            self._branches([*blocks, s.orelse], env, global_pass)
            self.exec_block(s.finalbody, env, global_pass)
        elif isinstance(s, ast.Match):
            self.eval(s.subject, env)
            self._branches([c.body for c in s.cases] + [[]], env, global_pass)
        elif isinstance(s, (ast.Raise, ast.Assert)):
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.eval(child, env)

    def _define(self, s: ast.FunctionDef | ast.AsyncFunctionDef, env: Env, global_pass: bool) -> Val:
        if is_jit(s):
            return NOTHING  # device code: torch is not reachable there; launched as kernel[grid](...)
        torch_decorator = ""
        for d in s.decorator_list:
            dv = self.eval(d, env)
            for ref in dv.refs:
                if _is_torch_compute(ref):
                    torch_decorator = ref
        scope = _MODULE if not self._stack and env is not None and global_pass and not self._returns else dict(env)
        self.fns.append(_Fn(s, scope, s.name, torch_decorator))
        i = len(self.fns) - 1
        if scope is not _MODULE and global_pass:
            self._analyse_alone(i)
        return Val(frozenset({f"fn:{i}"}))

    def _import_from(self, s: ast.ImportFrom, env: Env) -> None:
        if s.level or not s.module:
            for a in s.names:
                env[a.asname or a.name] = NOTHING
            return
        # the name rules report ``from torch import softmax`` at the import: calls of it are not reported again
        reported = s.module in ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft")
        for a in s.names:
            if a.name == "*":
                continue
            path = f"{s.module}.{a.name}"
            self.modules.add(s.module)
            silent = reported and a.name not in TORCH_ALLOWED and a.name != "functional" and not a.name[:1].isupper()
            env[a.asname or a.name] = Val(frozenset({path}), silent=silent)
            if path == "sys.modules":
                self.event(s, "loaded-modules", f"reaches sys.modules through from sys import {a.name}: {_LOADED}")

    def _aug_assign(self, s: ast.AugAssign, env: Env) -> None:
        value = self.eval(s.value, env)
        t = s.target
        if isinstance(t, ast.Attribute):
            self._patch(t.value, t.attr, env, t, "assigns")
            return
        current = self.eval(t, env)
        out = self._binop(s, current, value, BINOP_SYMBOLS.get(type(s.op), "?"), ast.unparse(s))
        if isinstance(t, ast.Name):
            env[t.id] = out
        elif isinstance(t, ast.Subscript):
            self._taint_owner(t.value, out.taint, env)

    def assign(self, t: ast.expr, v: Val, env: Env, value_node: ast.expr | None) -> None:
        """Bind ``t`` to ``v`` (element-wise for a tuple target and a tuple value of the same length)."""
        if isinstance(t, ast.Name):
            env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            if (
                isinstance(value_node, (ast.Tuple, ast.List))
                and len(value_node.elts) == len(t.elts)
                and not any(isinstance(e, ast.Starred) for e in (*t.elts, *value_node.elts))
            ):
                for te, ve in zip(t.elts, value_node.elts, strict=True):
                    self.assign(te, self.eval(ve, env), env, ve)
            else:
                for te in t.elts:
                    self.assign(te.value if isinstance(te, ast.Starred) else te, self.element(v), env, None)
        elif isinstance(t, ast.Starred):
            self.assign(t.value, v, env, None)
        elif isinstance(t, ast.Attribute):
            self._patch(t.value, t.attr, env, t, "assigns")
        elif isinstance(t, ast.Subscript):
            base = self.eval(t.value, env)
            key = _const_str(t.slice)
            for ref in sorted(base.refs):
                if ref.endswith(".__dict__") and self._patchable(ref[: -len(".__dict__")]):
                    name = f"{ref[: -len('.__dict__')]}.{key or '?'}"
                    self.event(t, "patch-alias", f"patches {name} through {ast.unparse(t)}: {_PATCH}")
            self._taint_owner(t.value, v.taint, env)

    def _taint_owner(self, node: ast.expr, taint: frozenset[Site], env: Env) -> None:
        """``out[...] = v``, ``out.copy_(v)``: the variable ``out`` now holds what made ``v``."""
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        if isinstance(node, ast.Name) and node.id in env and taint:
            env[node.id] = replace(env[node.id], taint=env[node.id].taint | taint)

    def _patchable(self, ref: str) -> bool:
        """A module, or an attribute path under one, or a module taken from ``sys.modules``."""
        if ref.startswith("loaded:"):
            return True
        root = ref.split(".")[0]
        return ":" not in ref and (root in self.modules or root in KNOWN_MODULES)

    def _patch(self, obj: ast.expr, attr: str, env: Env, node: ast.AST, verb: str) -> None:
        base = self.eval(obj, env)
        for ref in sorted(base.refs):
            if self._patchable(ref):
                shown = ref.replace("loaded:", "the loaded module ")
                self.event(node, "patch-alias", f"{verb} {shown}.{attr} through {ast.unparse(obj)}: {_PATCH}")

    # -- expressions -----------------------------------------------------------------------------------------------
    def element(self, v: Val) -> Val:
        """An element of ``v`` (iterating, unpacking, indexing): containers are the join of their elements."""
        if v.refs & {"sys.modules"}:
            return NOTHING
        kept = frozenset(r for r in v.refs if not r.startswith(("method:", "builtin:")) and not r.endswith(".__dict__"))
        return replace(v, refs=kept, silent=v.silent and bool(kept))

    def event(self, node: ast.AST, kind: str, text: str) -> None:
        self.events.add((getattr(node, "lineno", 0), kind, text))

    def eval(self, node: ast.expr | None, env: Env) -> Val:
        """The abstract value of ``node`` in ``env``; records events on the way."""
        if node is None:
            return NOTHING
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Budget
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return Val(frozenset({f"builtin:{node.id}"}))
        if isinstance(node, ast.Constant):
            return NOTHING
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, env), node.attr, node, env)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, env), self.eval(node.right, env)
            return self._binop(node, left, right, BINOP_SYMBOLS.get(type(node.op), "?"), ast.unparse(node))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, env)
            sym = UNARY_SYMBOLS.get(type(node.op))
            if sym and (v.tensor or v.maybe):
                return self._computed(node, v, f"computes {_short(node)} in torch: the unary {sym} on a tensor")
            return replace(v, refs=frozenset(), tensor=False)
        if isinstance(node, ast.Compare):
            vals = [self.eval(node.left, env)] + [self.eval(c, env) for c in node.comparators]
            out = join_all(vals)
            for op, (a, b) in zip(node.ops, zip(vals, vals[1:], strict=False), strict=False):
                sym = CMP_SYMBOLS.get(type(op))
                if sym and (a.tensor or b.tensor or (a.maybe and b.maybe)):
                    return self._computed(node, out, f"computes {_short(node)} in torch: {sym} on tensors")
            return replace(out, refs=frozenset(), tensor=False)
        if isinstance(node, ast.BoolOp):
            return join_all([self.eval(v, env) for v in node.values])
        if isinstance(node, ast.IfExp):
            self.eval(node.test, env)
            return self.eval(node.body, env).join(self.eval(node.orelse, env))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return join_all([self.eval(e, env) for e in node.elts])
        if isinstance(node, ast.Dict):
            return join_all([self.eval(v, env) for v in node.values] + [self.eval(k, env) for k in node.keys if k])
        if isinstance(node, ast.Starred):
            return self.eval(node.value, env)
        if isinstance(node, ast.NamedExpr):
            v = self.eval(node.value, env)
            self.assign(node.target, v, env, node.value)
            return v
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            scope = dict(env)
            for gen in node.generators:
                self.assign(gen.target, self.element(self.eval(gen.iter, scope)), scope, None)
                for cond in gen.ifs:
                    self.eval(cond, scope)
            if isinstance(node, ast.DictComp):
                return self.eval(node.key, scope).join(self.eval(node.value, scope))
            return self.eval(node.elt, scope)
        if isinstance(node, ast.Lambda):
            self.fns.append(_Fn(node, dict(env), "<lambda>"))
            return Val(frozenset({f"fn:{len(self.fns) - 1}"}))
        if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom)):
            return self.eval(node.value, env)
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                self.eval(part, env)
            return NOTHING
        if isinstance(node, ast.FormattedValue):
            self.eval(node.value, env)
            return NOTHING
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, env)
        return NOTHING

    def _binop(self, node: ast.AST, a: Val, b: Val, sym: str, text: str) -> Val:
        joined = a.join(b)
        if a.tensor or b.tensor or (a.maybe and b.maybe):
            return self._computed(node, joined, f"computes {_trim(text)} in torch: the {sym} operator on tensors")
        return replace(joined, refs=frozenset(), tensor=False)

    def _computed(self, node: ast.AST, v: Val, text: str, kind: str = "torch-operator") -> Val:
        """A tensor that torch computed at ``node`` from ``v``."""
        site = (getattr(node, "lineno", 0), kind, text)
        return Val(tensor=True, maybe=v.maybe, taint=v.taint | {site})

    def attribute(self, base: Val, attr: str, node: ast.AST, env: Env) -> Val:
        """``base.attr``."""
        if attr in FRAME_ATTRS:
            self.event(node, "frame-walk", f"reads a frame's {attr}: {_FRAMES}")
            return NOTHING
        refs: set[str] = set()
        for ref in base.refs:
            if ref.startswith(("fn:", "method:", "methodcaller:", "builtin:")):
                continue
            if attr == "sys" or (attr in KNOWN_MODULES and not ref.startswith("loaded:")):
                refs.add(attr)
            else:
                refs.add(f"{ref}.{attr}")
        out = Val(frozenset(refs), silent=base.silent)
        if "sys.modules" in refs and not _is_literal(node, "sys.modules"):
            self.event(node, "loaded-modules", f"reaches sys.modules through {_short(node)}: {_LOADED}")
        if base.tensor or base.maybe:
            if attr in SCALAR_ATTRS:
                return replace(out, taint=base.taint)
            if attr in VIEW_ATTRS:
                return Val(frozenset(refs), tensor=True, maybe=base.maybe, taint=base.taint)
            owner = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else ""
            return Val(frozenset(refs | {f"method:{attr}"}), taint=base.taint, maybe=base.maybe, owner=owner)
        return out

    def subscript(self, node: ast.Subscript, env: Env) -> Val:
        base = self.eval(node.value, env)
        index = self.eval(node.slice, env)
        key = _const_str(node.slice)
        refs: set[str] = set()
        for ref in base.refs:
            if ref.endswith(".__dict__") and key is not None:
                parent = ref[: -len(".__dict__")]
                refs |= self.attribute(Val(frozenset({parent})), key, node, env).refs
            elif ref == "sys.modules":
                refs.add(f"loaded:{key or '?'}")
            elif ref == "builtin:globals" and key is not None:
                refs |= env.get(key, NOTHING).refs
        if "sys.modules" in refs:
            self.event(node, "loaded-modules", f"reaches sys.modules through {_short(node)}: {_LOADED}")
        if base.tensor or base.maybe:  # an element or a view of the input data or of a tensor
            return Val(frozenset(refs), tensor=base.tensor, maybe=base.maybe, taint=base.taint | index.taint)
        element = self.element(base)  # ``ops[0]`` of ``ops = [torch.exp, torch.log]``: either
        return Val(frozenset(refs) | element.refs, taint=base.taint, silent=element.silent)

    def call(self, node: ast.Call, env: Env) -> Val:
        f = self.eval(node.func, env)
        args = [self.eval(a, env) for a in node.args]
        kwargs = {k.arg or "**": self.eval(k.value, env) for k in node.keywords}
        if isinstance(node.func, ast.Subscript) and not f.refs:  # kernel[grid](...): a Triton launch, not torch
            return NOTHING
        out = self.apply(f, args, kwargs, node, env)
        for k in node.keywords:  # torch.add(a, b, out=c): c holds the result
            if k.arg == "out":
                self._taint_owner(k.value, out.taint, env)
        return out

    def apply(self, f: Val, args: list[Val], kwargs: dict[str, Val], node: ast.Call, env: Env, alias: str = "") -> Val:
        """The value of calling ``f`` (its refs, each) at ``node``, named ``alias`` in messages (the call's own
        text by default)."""
        alias = alias or _short(node.func)
        every = args + list(kwargs.values())
        data = join_all(every)
        results: list[Val] = []
        for ref in sorted(f.refs):
            if ref.startswith("fn:"):
                i = int(ref[3:])
                ret = self.call_fn(i, args, kwargs)
                deco = self.fns[i].torch_decorator
                if deco:
                    ret = self._computed(
                        node,
                        ret,
                        f"falls back to torch for {deco} (the decorator of {self.fns[i].name})",
                        "torch-alias",
                    )
                results.append(ret)
            elif ref.startswith("method:"):
                results.append(self._method(ref[7:], f, args, node, env))
            elif ref.startswith("methodcaller:"):
                name = ref[13:]
                if name in TENSOR_COMPUTE_METHODS | DUNDER_COMPUTE and (data.tensor or data.maybe):
                    results.append(
                        self._computed(node, data, f"falls back to torch for .{name}() through {alias}", "torch-alias")
                    )
            elif ref.startswith(("builtin:", "builtins.")):
                results.append(self._builtin(ref.split(":", 1)[-1].removeprefix("builtins."), args, kwargs, node, env))
            elif ref in FRAME_FUNCS or ref.startswith("traceback.StackSummary"):
                self.event(node, "frame-walk", f"walks the call stack with {ref}{_as(alias, ref)}: {_FRAMES}")
            elif ref in GC_WALKS:
                self.event(
                    node, "loaded-modules", f"reaches every live object through {ref}{_as(alias, ref)}: {_LOADED}"
                )
            elif ref == "operator.methodcaller" and node.args and _const_str(node.args[0]):
                results.append(Val(frozenset({f"methodcaller:{_const_str(node.args[0])}"})))
            elif ref.startswith("operator.") and ref[9:] in OPERATOR_COMPUTE:
                if data.tensor or data.maybe:
                    results.append(
                        self._computed(
                            node, data, f"computes {_short(node)} in torch: {ref}{_as(alias, ref)} on tensors"
                        )
                    )
            elif ref in ("functools.partial", "functools.reduce") and args:
                if ref == "functools.partial":
                    results.append(replace(args[0], owner=""))
                else:
                    elem = self.element(join_all(args[1:]))
                    results.append(self.apply(args[0], [elem, elem], {}, node, env, _short(node.args[0])))
            elif ref in ("importlib.import_module",) and node.args and _const_str(node.args[0]):
                results.append(Val(frozenset({_const_str(node.args[0]) or ""})))
            elif ref.split(".")[0] == "torch":
                results.append(self._torch(ref, f, data, node, alias))
        if not results:  # an unknown callee: what it was given may be in what it gives back
            return Val(taint=data.taint)
        return join_all(results)

    def _torch(self, ref: str, f: Val, data: Val, node: ast.Call, alias: str) -> Val:
        parts = ref.split(".")
        last = parts[-1]
        if last in STREAM_NAMES:
            self.event(node, "stream-alias", f"calls {ref}{_as(alias, ref)}: {_STREAM}")
            return NOTHING
        if "()" in ref:  # an instance of a torch.nn module class, called (or a method of it): torch computes
            what = ref.replace("()", " instance", 1)
            return self._computed(node, data, f"falls back to torch for a {what} called through {alias}", "torch-alias")
        if _is_nn_module(ref):  # constructing one computes nothing; calling the instance does (red team 24, F7)
            return Val(frozenset({f"{ref}()"}))
        if not _is_torch_compute(ref):
            return Val(tensor=last in TORCH_ALLOWED and last not in ("device", "dtype", "finfo", "iinfo"))
        if len(parts) == 4 and parts[1] == "ops" and f"{parts[2]}::{parts[3]}" in self.own_ops:  # its own operator
            return Val(tensor=True, maybe=data.maybe)
        if f.silent:
            return Val(tensor=True, maybe=data.maybe, taint=data.taint)
        return self._computed(node, data, f"falls back to torch for {ref} through {alias}", "torch-alias")

    def _method(self, name: str, f: Val, args: list[Val], node: ast.Call, env: Env) -> Val:
        data = join_all([f, *args])
        if name in SCALAR_METHODS:
            return Val(taint=data.taint)
        if name in INPLACE_WRITES:
            if f.owner and f.owner in env:
                taint = join_all(args).taint
                env[f.owner] = replace(env[f.owner], taint=env[f.owner].taint | taint)
                return env[f.owner]
            return Val(tensor=True, maybe=f.maybe, taint=data.taint)
        if name in DUNDER_COMPUTE:
            return self._computed(node, data, f"computes {_short(node)} in torch: the {name} operator on a tensor")
        if name in TENSOR_COMPUTE_METHODS:
            # ``x.softmax(-1)`` itself is the name rules' (a torch-op on this line); a bound method called later is not
            v = self._computed(
                node,
                data,
                f"falls back to torch for the tensor method .{name}() through {_short(node.func)}",
                "torch-alias",
            )
            if name.endswith("_") and f.owner and f.owner in env:
                env[f.owner] = replace(env[f.owner], taint=env[f.owner].taint | v.taint)
            return v
        return Val(tensor=True, maybe=f.maybe, taint=data.taint)

    def _builtin(self, name: str, args: list[Val], kwargs: dict[str, Val], node: ast.Call, env: Env) -> Val:
        data = join_all(args + list(kwargs.values()))
        if name == "getattr" and len(node.args) >= 2:
            attr = _const_str(node.args[1])
            return self.attribute(args[0], attr, node, env) if attr is not None else Val(taint=data.taint)
        if name == "vars" and args:
            return Val(frozenset(f"{r}.__dict__" for r in args[0].refs if ":" not in r))
        if name in ("setattr", "delattr") and node.args:
            attr = _const_str(node.args[1]) if len(node.args) > 1 else None
            for ref in sorted(args[0].refs):
                if self._patchable(ref):
                    shown = ref.replace("loaded:", "the loaded module ")
                    target = _short(node.args[0])
                    self.event(node, "patch-alias", f"patches {shown}.{attr or '?'} through {target}: {_PATCH}")
            return NOTHING
        if name in BUILTIN_COMPUTE and (data.tensor or data.maybe):
            return self._computed(node, data, f"computes {_short(node)} in torch: {name}() on tensors")
        if name in ("map", "filter") and len(args) >= 2:
            return self.apply(args[0], [self.element(a) for a in args[1:]], {}, node, env, _short(node.args[0]))
        if name in ("iter", "next", "reversed", "sorted", "list", "tuple", "set", "frozenset", "enumerate", "zip"):
            return self.element(data) if data.tensor or data.maybe or data.taint else NOTHING
        if name in ("__import__",) and node.args and _const_str(node.args[0]):
            return Val(frozenset({(_const_str(node.args[0]) or "").split(".")[0]}))
        if name in ("globals", "locals"):
            return Val(frozenset({"builtin:globals"}))
        return Val(taint=data.taint)

    def call_fn(self, i: int, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """The value function ``i`` returns when called with ``args`` and ``kwargs`` (its body analysed with them,
        up to ``MAX_DEPTH`` calls deep; a recursive call gives the join of its arguments)."""
        fn = self.fns[i]
        if i in self._stack or len(self._stack) >= MAX_DEPTH:
            return Val(maybe=join_all(args).maybe, taint=join_all(args + list(kwargs.values())).taint)
        env = dict(fn.env)
        a = fn.node.args
        positional = [*a.posonlyargs, *a.args]
        for p, v in zip(positional, args, strict=False):
            env[p.arg] = v
        for p in positional[len(args) :] + a.kwonlyargs:
            env[p.arg] = kwargs.get(p.arg, NOTHING)
        if a.vararg:
            env[a.vararg.arg] = join_all(args[len(positional) :])
        if a.kwarg:
            env[a.kwarg.arg] = join_all(list(kwargs.values()))
        self._stack.append(i)
        self._returns.append([])
        try:
            if isinstance(fn.node, ast.Lambda):
                return self.eval(fn.node.body, env)
            self.exec_block(fn.node.body, env)
            return join_all(self._returns[-1])
        finally:
            self._returns.pop()
            self._stack.pop()


_MODULE: Env = {}  # marker: a function defined at the module's top level (it sees the module's final globals)
_PATCH = "patching torch, time, triton or ktui fools later checks"
_LOADED = "can call the reference module or ktui's"
_FRAMES = "a kernel that looks at its callers can tell a check from real use"
_STREAM = "work on another stream escapes events on the current one"


def _is_torch_compute(ref: str) -> bool:
    """``torch.softmax``, ``torch.nn.functional.relu``, ``torch.Tensor.add``: a torch function that computes (not
    an allocation, a stream, a class or a CUDA runtime call)."""
    parts = ref.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return False
    last = parts[-1]
    if last in TORCH_ALLOWED or last in STREAM_NAMES or "cuda" in parts[:-1] or "return_types" in parts[:-1]:
        return False  # (``torch.return_types.median((v, i))``: a named tuple of results, red team round 25, #14)
    if last[:1].isupper() or last.startswith("_") and not last.startswith("__"):
        return False
    return last not in ("float32", "float16", "bfloat16", "float64", "int32", "int64", "bool", "uint8", "int8")


# torch.nn classes whose instances compute nothing when called or hold tensors (every other ``torch.nn.X`` is a
# layer: ``torch.nn.Softmax(dim=-1)(x)`` is torch's softmax)
NN_HOLDERS = frozenset(
    {
        "Module",
        "Parameter",
        "Buffer",
        "UninitializedParameter",
        "UninitializedBuffer",
        "ModuleList",
        "ModuleDict",
        "ParameterList",
        "ParameterDict",
        "Identity",
    }
)


def _is_nn_module(ref: str) -> bool:
    """``torch.nn.Softmax``, ``torch.nn.modules.activation.GELU``: a torch.nn layer class (capitalized, under
    ``torch.nn`` but not ``torch.nn.functional`` or ``torch.nn.init``, not a holder of ``NN_HOLDERS``)."""
    parts = ref.split(".")
    if len(parts) < 3 or parts[:2] != ["torch", "nn"] or parts[2] in ("functional", "init", "utils", "attention"):
        return False
    last = parts[-1]
    return last[:1].isupper() and last not in NN_HOLDERS


def _param_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return names + [p.arg for p in (a.vararg, a.kwarg) if p is not None]


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dotted_parts(node: ast.AST) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return list(reversed(parts))


def _last(node: ast.AST) -> str:
    parts = _dotted_parts(node)
    return parts[-1] if parts else ""


def _is_literal(node: ast.AST, dotted: str) -> bool:
    return ".".join(_dotted_parts(node)) == dotted


def _trim(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _short(node: ast.AST) -> str:
    return _trim(ast.unparse(node))


def _as(alias: str, ref: str) -> str:
    """`` (as X)`` when the call's own text is not the path."""
    return "" if alias == ref else f" (as {alias})"


def flow_findings(tree: ast.Module, covered: set[tuple[int, str]], own_ops: set[str] | None = None) -> list[Site]:
    """The data-flow findings of ``tree`` (line, kind, text), less those on a line where the name rules already
    report a finding of a kind that covers them (``COVERED_BY``; ``covered`` holds the name rules' (line, kind));
    ``own_ops``: the operators the module registers (``scan.registered_ops``), whose calls are its own kernels."""
    out = []
    for line, kind, text in Flow(own_ops=set(own_ops or ())).run(tree):
        if any((line, k) in covered for k in COVERED_BY[kind]):
            continue
        out.append((line, kind, text))
    return out
