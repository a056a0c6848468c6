"""Intent: whether backward is meant to be the derivative of forward.

One rule. The derivative of forward is the contract, unless intent says otherwise. Intent
comes from, in this order:

1. the spec (`gradient:`), the user's own word;
2. `[tool.gradverify] surrogates`, patterns that declare a convention once for many
   Functions (gradverify.spec.config);
3. words in the code around the Function (`said`): its docstrings and its bases', its class
   name, the comments in its body, its module's docstring where the module holds no other
   Function, and the docstrings of the code that calls it and no other Function (words
   that stand beside several Functions speak of none of them alone), in one small
   vocabulary (surrogate gradient, straight-through, STE, pseudo-gradient, natural
   gradient, "not the true gradient");
4. construction, per argument (`constructed`): forward does not depend on it, forward is
   the identity in it, or forward is piecewise constant in it (a comparison, sign, round,
   argmax, a 0/1 sample: its true derivative is zero almost everywhere).

A backward that passes grad_output through is no evidence: the same code is a forgotten
mask in one file and a deliberate estimator in another. Anything else that disagrees with
the derivative is a failure, whose hint gives the one line that declares intent
(`declaration`).

Importing this module never imports torch; `constructed` does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.dataflow import statements
from gradverify.inference.reading.facts import code_facts
from gradverify.target.syntax import (
    FunctionNode,
    called_name,
    is_module,
    own_nodes,
    parsed_function,
)

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# The vocabulary: words that say backward is not the derivative on purpose. A surrogate
# loss or model says nothing of a gradient, so `surrogate` needs a gradient word beside it.
INTENT_WORDS = re.compile(
    r"straight[- ]through|\bSTE\b|\bsurrogate[- ](?:gradient|derivative|backward|function|spike)"
    r"|gradient:\s*surrogate|\b(?:gradient|backward|derivative) is an? surrogate"
    r"|\bpseudo[- ]?(?:gradient|derivative)|\bnatural[- ]gradient"
    r"|\bnot (?:the |an? )?(?:true|analytic(?:al)?|exact|real|actual) "
    r"(?:gradient|derivative|solution|jacobian)",
    re.IGNORECASE,
)
# STE is an acronym only in capitals (`# ste` or Paste are not estimators).
_ACRONYM = re.compile(r"\bSTE\b")
# A class name that says so: RoundSTE, StraightThroughSign, SurrogateGradSpike,
# GradientRerouting; a SurrogateLoss says nothing of its gradient.
_NAME = re.compile(
    r"(?:^|(?<=[a-z0-9_]))STE(?=$|[_0-9]|[A-Z][a-z])|(?i:straight_?through|surrogate_?grad|rerout)"
)
# Calls whose value is piecewise constant in their argument: its derivative is zero almost
# everywhere (comparisons are ast.Compare; a 0/1 sample is constant in its probability
# under one seed).
STEP_CALLS = frozenset({
    "sign", "round", "floor", "ceil", "trunc", "argmax", "argmin", "argsort", "heaviside",
    "bernoulli", "multinomial", "bucketize", "searchsorted", "gt", "lt", "ge", "le", "eq",
    "ne", "greater", "less", "greater_equal", "less_equal", "logical_and", "logical_or",
    "logical_not", "bool", "long", "int", "byte", "one_hot", "signbit", "round_",
})  # fmt: skip
# Reads of a tensor's metadata, not its values.
_METADATA = frozenset({"shape", "ndim", "dtype", "device", "layout", "requires_grad", "is_cuda"})
_SHAPE_CALLS = frozenset({
    "size", "dim", "numel", "len", "ndimension", "nelement", "isinstance", "is_floating_point",
    "is_complex", "stride", "is_contiguous", "data_ptr", "get_device",
})  # fmt: skip
_NUDGE = 1e-6  # each nudge of an argument, against which forward's move is measured
_SCALES = (1.0, 1e-2)  # the case's values, then the same values near 0


def said(target: Target) -> str | None:
    """The words by which the code around a Function says its backward is not the
    derivative, with where they stand (`its docstring says 'straight-through'`); else None."""
    if target.op is not None or not target.is_function or not isinstance(target.obj, type):
        return None
    for where, text in _texts(target):
        found = phrase(text)
        if found:
            return f"{where} says {found!r}"
    name = target.obj.__name__
    return f"its name, {name}, says so" if _NAME.search(name) else None


def phrase(text: str) -> str | None:
    """The words of `text` that say backward is not the derivative on purpose, or None."""
    found = INTENT_WORDS.search(text)
    if found is None:
        return None
    if found.group(0).upper() == "STE" and not _ACRONYM.search(found.group(0)):
        return None
    return found.group(0)


def _texts(target: Target) -> Iterator[tuple[str, str]]:
    """(where, text) for each piece of prose around the Function, nearest first."""
    facts = code_facts(target)
    for text in facts.docstrings:
        yield "its docstring", text
    for comment in facts.comments:
        yield "a comment in its body", comment
    if facts.module_doc is not None:
        yield f"the docstring of module {facts.module}", facts.module_doc
    for caller in facts.callers:
        if caller.applies > 1:  # a module that applies several Functions speaks of them all
            continue
        yield f"the docstring of {caller.name} ({caller.where}), which calls it,", caller.docstring


def constructed(target: Target, arguments: Sequence[Any], index: int) -> str | None:
    """Why forward's construction makes any backward for argument `index` a surrogate, on
    the case's `arguments`: forward does not read it, returns it unchanged, or is piecewise
    constant in it (a step op in forward's code, and forward's outputs do not move when it
    is nudged, at its values and near 0); else None."""
    read = _read_forward(target, index)
    if read is None:
        return None
    forward, name = read
    if ignored_by_forward(forward, name):
        return f"forward's output does not depend on {name}"
    if _returned_as_is(forward, name):
        return f"forward returns {name} unchanged: any backward for it is deliberate"
    step = _step(target, name)
    if step is not None and _flat(target, arguments, index):
        return (
            f"forward is piecewise constant in {name} (`{step}`): its derivative is 0 almost "
            "everywhere"
        )
    return None


def built_as_surrogate(target: Target, index: int) -> bool:
    """Whether forward's code alone makes argument `index` a surrogate (it ignores it,
    returns it unchanged, or reaches it only through a step): `constructed` without the
    runs that confirm a step."""
    read = _read_forward(target, index)
    if read is None:
        return False
    forward, name = read
    return (
        ignored_by_forward(forward, name)
        or _returned_as_is(forward, name)
        or _step(target, name) is not None
    )


def _read_forward(target: Target, index: int) -> tuple[FunctionNode, str] | None:
    """forward's syntax tree and the name of its argument `index` (as the Target names
    forward's own parameters, past ctx and cls), for a Function with readable source."""
    if target.op is not None or not target.is_function:
        return None
    forward = parsed_function(getattr(target.obj, "forward", None))
    names = list(target.parameters)
    if forward is None or index >= len(names):
        return None
    return forward, names[index]


def declaration(target: str) -> str:
    """The one line that declares a Function's backward a surrogate, for its hint."""
    module, _, name = target.partition(":")
    pattern = f"{module.removesuffix('.py').replace('/', '.')}.{name}" if name else target
    return (
        "if backward is not meant to be the derivative here, declare it: `gradient: surrogate` "
        f'in its spec, or surrogates = ["{pattern}"] under [tool.gradverify]'
    )


def _parameters(forward: ast.FunctionDef | ast.AsyncFunctionDef | None) -> list[str]:
    if forward is None:
        return []
    return [a.arg for a in [*forward.args.posonlyargs, *forward.args.args][1:]]


def ignored_by_forward(forward: ast.AST, name: str) -> bool:
    """Whether forward's output cannot depend on `name`: forward only keeps it for
    backward (save_for_backward, an attribute of ctx) or never reads it."""
    for statement in forward.body if isinstance(forward, ast.FunctionDef) else []:
        if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement)):
            continue
        if not (_saved(statement) or _on_ctx_only(statement)):
            return False
    return True


def _saved(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr in {"save_for_backward", "mark_non_differentiable"}
    )


def _on_ctx_only(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Assign) and all(_on_ctx(t) for t in statement.targets)


def _on_ctx(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple | ast.List):
        return all(_on_ctx(e) for e in node.elts)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ctx"
    )


# Calls that leave a tensor's values as they are (`x.view_as(x)`, `grad.clone()`).
AS_IS = frozenset({"clone", "contiguous", "view_as", "reshape_as", "detach"})


def _returned_as_is(forward: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether every return of forward gives `name` itself (`x`, `x.clone()`, `x.view_as(x)`)."""
    nodes = own_nodes(forward)
    returns = [n.value for n in nodes if isinstance(n, ast.Return) and n.value]
    return (
        bool(returns)
        and all(_as_is(value, name) for value in returns)
        and not any(_written(node, name) for node in nodes)
    )


def _written(node: ast.AST, name: str) -> bool:
    """Whether `node` changes `name` in place: `x.exp_()`, `x[i] = v`, `x += 1`,
    `ctx.mark_dirty(x)` (forward then returns new values in x's memory)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        if node.func.attr == "mark_dirty":
            return any(isinstance(a, ast.Name) and a.id == name for a in node.args)
        in_place = node.func.attr.endswith("_") and not node.func.attr.startswith("_")
        return in_place and isinstance(receiver, ast.Name) and receiver.id == name
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, ast.AugAssign)
        else []
    )
    return any(
        isinstance(t, ast.Subscript | ast.Name) and _root(t) == name
        for t in targets
        if not (isinstance(t, ast.Name) and isinstance(node, ast.Assign))
    )


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _as_is(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in AS_IS and _as_is(node.func.value, name)
    return False


def _step(target: Target, name: str) -> str | None:
    """The piecewise-constant operation through which alone forward's outputs depend on
    `name`, as written (`v > 0`, `torch.round(x * 4)`); None where an output also depends on
    it smoothly (`torch.where(x < lo, lo, x)` is linear in lo) or not at all. A Python `if`
    or `assert` on values is a precondition (`if lo >= hi: raise`), never a step."""
    from gradverify.inference.reading.dataflow import target_flow

    flow = target_flow(target)
    if flow.forward is None:
        return None
    returns = [n.value for n in own_nodes(flow.forward) if isinstance(n, ast.Return) and n.value]
    if not returns or not any(name in flow.sources(value) for value in returns):
        return None
    smooth = _smooth_sources(flow.forward)
    if any(name in smooth(value) for value in returns):
        return None
    tests = {
        id(node.test)
        for node in own_nodes(flow.forward)
        if isinstance(node, ast.If | ast.Assert | ast.While)
    }
    for node in sorted(own_nodes(flow.forward), key=lambda n: getattr(n, "lineno", 0)):
        if _is_step(node) and id(node) not in tests and name in flow.sources(node):
            return ast.unparse(node)[:60]
    return None


def _is_step(node: ast.AST) -> bool:
    return isinstance(node, ast.Compare) or (
        isinstance(node, ast.Call) and called_name(node) in STEP_CALLS
    )


def _smooth_sources(forward: ast.FunctionDef | ast.AsyncFunctionDef) -> Any:
    """A reader of the parameters an expression of forward depends on smoothly: through a
    path that passes no step (a comparison, round, a 0/1 sample), no shape or dtype read and
    no `zeros_like(x)`-style constructor, which take only x's metadata."""
    parameters = set(_parameters(forward))  # a superset (ctx too): any name that flows
    derived: dict[str, frozenset[str]] = {}

    def smooth(node: ast.AST | None) -> frozenset[str]:
        if node is None or _is_step(node):
            return frozenset()
        if isinstance(node, ast.Name):
            own = {node.id} if node.id in parameters else set()
            return frozenset(own) | derived.get(node.id, frozenset())
        if isinstance(node, ast.Attribute):
            if node.attr in _METADATA:
                return frozenset()
            key = _ctx_key(node)
            return derived.get(key, frozenset()) if key else smooth(node.value)
        if isinstance(node, ast.Call):
            return _call_sources(node, smooth)
        if isinstance(node, ast.IfExp):
            return smooth(node.body) | smooth(node.orelse)
        if isinstance(node, ast.Subscript):
            return smooth(node.value)
        found: frozenset[str] = frozenset()
        for child in ast.iter_child_nodes(node):
            found |= smooth(child)
        return found

    for statement in statements(forward.body):
        _bind_smooth(statement, smooth, derived)
    return smooth


def _call_sources(call: ast.Call, smooth: Any) -> frozenset[str]:
    name = called_name(call)
    if name in _SHAPE_CALLS:
        return frozenset()
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    arguments = list(call.args) + [k.value for k in call.keywords]
    if name.endswith("_like") and arguments:
        arguments = arguments[1:]  # zeros_like(x): x's shape and dtype, not its values
    if name.startswith("new_") or receiver is None or is_module(receiver):
        receiver = None  # x.new_tensor(lo): lo's values, x's dtype; torch.f(...): no receiver
    found = smooth(receiver) if receiver is not None else frozenset()
    for argument in arguments:
        found |= smooth(argument)
    return found


def _ctx_key(node: ast.Attribute) -> str | None:
    is_ctx = isinstance(node.value, ast.Name) and node.value.id == "ctx"
    return f"ctx.{node.attr}" if is_ctx else None


def _bind_smooth(statement: ast.stmt, smooth: Any, derived: dict[str, frozenset[str]]) -> None:
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign) and statement.value:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        sources = smooth(statement.value)
        for target in targets:
            for inner in ast.walk(target):
                key = inner.id if isinstance(inner, ast.Name) else None
                if isinstance(inner, ast.Attribute):
                    key = _ctx_key(inner)
                if key is not None:
                    derived[key] = derived.get(key, frozenset()) | sources
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value  # `hot.scatter_(-1, index, 1.0)`: in place into its receiver
        func = call.func
        in_place = isinstance(func, ast.Attribute) and func.attr.endswith("_")
        if in_place and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            key = func.value.id
            derived[key] = derived.get(key, frozenset()) | _call_sources(call, smooth)


def _flat(target: Target, arguments: Sequence[Any], index: int) -> bool:
    """Whether forward's floating outputs stay put when argument `index` is nudged, at the
    case's values and at the same values scaled near 0 (a clamp is flat only outside its
    bounds; a step is flat everywhere but on its edge). Forward refusing the scaled values
    leaves the case's own to decide."""
    import torch

    argument = arguments[index] if index < len(arguments) else None
    if not isinstance(argument, torch.Tensor) or not argument.is_floating_point():
        return False
    values = argument.detach()
    for scale in _SCALES:
        try:
            flat = _flat_at(target, arguments, index, values * scale)
        except Exception:  # forward refused the values: no evidence at this scale
            if scale == 1.0:
                return False
            continue
        if not flat:
            return False
    return True


def _flat_at(target: Target, arguments: Sequence[Any], index: int, values: Any) -> bool:
    from gradverify.numerics import seeded

    direction = seeded.uniform(values.shape, seeded.generator(0), values.device, values.dtype)
    before = _outputs(target, _with(arguments, index, values))
    after = _outputs(target, _with(arguments, index, values + _NUDGE * (direction + 0.5)))
    if not before or len(before) != len(after):
        return False
    return all(
        a.shape == b.shape and bool(((a - b).abs() <= 1e-3 * _NUDGE).all())
        for a, b in zip(before, after, strict=True)
    )


def _with(arguments: Sequence[Any], index: int, value: Any) -> list[Any]:
    import torch

    return [
        value if i == index else (a.detach().clone() if isinstance(a, torch.Tensor) else a)
        for i, a in enumerate(arguments)
    ]


def _outputs(target: Target, arguments: Sequence[Any]) -> list[Any]:
    import torch

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        outputs = target.call(*arguments)
    items = outputs if isinstance(outputs, tuple | list) else (outputs,)
    return [o.detach() for o in items if isinstance(o, torch.Tensor) and o.is_floating_point()]
