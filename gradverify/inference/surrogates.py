"""A straight-through estimator found in the code, for inferred inputs only: backward hands
grad_output on unchanged (`return grad`, `return grad_out, None`, `grad.clone()`), while
forward's output does not move with that input (round, argmax, a scatter of ones, or an
output forward takes from elsewhere). Such a backward is on purpose not the derivative:
inference checks it as `gradient: surrogate`, the declaration its author left out.

A pass-through whose forward does move with the input (`x * 2` with `return grad`) is no
estimator but a forgotten factor: it stays a finding. A user's own spec is never changed
here (its author says `gradient: surrogate` or gets the hint).

Importing this module never imports torch; `straight_through` does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gradverify.inference.contract import declared_surrogate
from gradverify.inference.docstrings import docstrings
from gradverify.target.syntax import own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.inference.cases import Case
    from gradverify.inference.choice import Choice
    from gradverify.target.loaded import Target

# Inference.surrogate's value for a pass-through found in the code (not in a docstring).
PASSES_THROUGH = "backward passes grad_output through"
# Calls on grad_output that leave its values as they are.
_UNCHANGED = frozenset({"clone", "contiguous", "view_as", "reshape_as", "detach"})
_NUDGE = 1e-6  # each input's nudge, against which forward's move is measured
# A class name that says backward is a surrogate: RoundSTE, StraightThroughSign,
# GradientRerouting, SurrogateGradientSpike; a SurrogateLoss says nothing of its gradient.
# STE counts only as the capitalised acronym (Paste and Waste are no estimators).
_SURROGATE_NAME = re.compile(
    r"(?:^|(?<=[a-z0-9_]))STE(?=$|[_0-9]|[A-Z][a-z])|(?i:straight_?through|surrogate_?grad|rerout)"
)
# A docstring that says backward gives the natural gradient (with respect to other
# parameters than forward's, on purpose: natural gradient descent).
_NATURAL = re.compile(r"\bnatural[- ]gradient", re.IGNORECASE)
NAMED = "its name "
CALLER = "its caller "  # Inference.surrogate's prefix for what the code calling it says
# Inference.surrogate's prefix for a parameter only backward reads (a gradient's scale).
STEERED = (
    "only backward reads "  # Inference.surrogate's prefix for a surrogate its class name declares
)


def surrogate_note(surrogate: str) -> str:
    """The note's sentence on an inferred `gradient: surrogate`, whoever declared it."""
    if surrogate.startswith(STEERED):
        return (
            f"Checked as a surrogate gradient, `gradient: surrogate`: forward's output does not "
            f"depend on {surrogate.removeprefix(STEERED)}, which only backward reads, to steer "
            "the gradient (a moving average, a scale)"
        )
    if surrogate.startswith(NAMED):
        name = surrogate.removeprefix(NAMED)
        return f"Its name, {name}, says backward is a surrogate: checked as `gradient: surrogate`"
    if surrogate == PASSES_THROUGH:
        return f"Checked as a straight-through estimator, `gradient: surrogate`: {PASSES_THROUGH}"
    if surrogate.startswith(CALLER):
        return (
            f"The docstring of {surrogate.removeprefix('its ')}: checked as `gradient: surrogate`"
        )
    return f"The docstring says {surrogate!r}: checked as `gradient: surrogate`"


def surrogate_comment(surrogate: str) -> str:
    """`init`'s comment beside an inferred `gradient: surrogate`."""
    if surrogate.startswith(STEERED):
        return f"{surrogate}: it steers the gradient"
    if surrogate.startswith(NAMED):
        return f"{surrogate} says so"
    if surrogate == PASSES_THROUGH:
        return f"a straight-through estimator: {PASSES_THROUGH}"
    if surrogate.startswith(CALLER):
        return f"the docstring of {surrogate.removeprefix('its ')}"
    return f"the docstring says {surrogate!r}"


def surrogate_in_code(target: Target) -> str | None:
    """What the code says of a surrogate backward, read without running it: the Function's
    docstrings (`straight-through estimator`, `natural gradient`), its class name (RoundSTE),
    its callers' docstrings, or a parameter only backward reads; else None. Inference and
    `record` both ask it, then try a pass-through on inputs (`straight_through`: two forward
    runs)."""
    return (
        declared_surrogate(target)
        or named_surrogate(target)
        or natural_gradient(target)
        or steering(target)
    )


def named_surrogate(target: Target) -> str | None:
    """`its name RoundSTE` where the Function's class name says backward is a surrogate
    (STE, StraightThrough, SurrogateGradient, GradientRerouting); else None."""
    if target.op is not None or not target.is_function:
        return None
    name = getattr(target.obj, "__name__", "")
    return f"{NAMED}{name}" if _SURROGATE_NAME.search(name) else None


def natural_gradient(target: Target) -> str | None:
    """`natural gradient` where the Function's docstrings say backward gives one, or
    `its caller Model (model.py:65) says 'natural gradient'` where the docstring of the
    function or class that calls it does (a Function built for natural gradient descent is
    often documented only where it is used); else None."""
    from gradverify.inference.call_sites import callers

    if target.op is not None or not target.is_function:
        return None
    methods = (getattr(target.obj, name, None) for name in ("forward", "backward"))
    found = _NATURAL.search("\n".join(docstrings(target.obj, *methods)))
    if found:
        return found.group(0)
    for caller in callers(target):
        said = _NATURAL.search(caller.docstring)
        if said:
            return f"{CALLER}{caller.name} ({caller.where}) says {said.group(0)!r}"
    return None


def steering(target: Target) -> str | None:
    """`only backward reads ewma` where forward's output does not depend on a parameter
    (forward only keeps it for backward, or never reads it) and backward still uses it:
    reads it and gives it no gradient (None), or gives it one that is no chain rule at all,
    free of grad_output (`regularization * (M - R)`). Either way it can only steer the
    gradient on purpose (pyro's moving average of the input, a gradient-reversal layer's
    scale, roma's Procrustes regularization); else None."""
    from gradverify.inference.dataflow import target_flow

    if target.op is not None or not target.is_function:
        return None
    flow = target_flow(target)
    if flow.forward is None or flow.backward is None:
        return None
    returns = [n for n in own_nodes(flow.backward) if isinstance(n, ast.Return)]
    outputs = [n.value for n in own_nodes(flow.forward) if isinstance(n, ast.Return) and n.value]
    shaping = set().union(*(flow.sources(n, in_backward=True) for n in returns if n.value))
    grads = {a.arg for a in flow.backward.args.args[1:]}
    for index, name in enumerate(target.parameters):
        if not returns or not _only_kept(flow.forward, name):
            continue
        if any(name in flow.sources(value) for value in outputs):
            continue  # kept on ctx and read back for the output (`x * ctx.total`)
        given = [_returned(node, index) for node in returns]
        if all(_none(value) for value in given):
            if name in shaping:  # another input's gradient is made from it (`grad / ewma`)
                return f"{STEERED}{name}"
        elif not any(_mentions(value, grads) for value in given):
            return f"{STEERED}{name}"
    return None


def _mentions(node: ast.AST | None, names: set[str]) -> bool:
    return node is not None and any(
        isinstance(n, ast.Name) and n.id in names for n in ast.walk(node)
    )


def _only_kept(forward: ast.AST, name: str) -> bool:
    """Whether forward's output cannot depend on `name`: forward uses it only to keep it
    for backward (save_for_backward, assigned to ctx), or not at all."""
    for statement in forward.body if isinstance(forward, ast.FunctionDef) else []:
        if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement)):
            continue
        kept = (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and statement.value.func.attr == "save_for_backward"
        ) or (isinstance(statement, ast.Assign) and all(_on_ctx(t) for t in statement.targets))
        if not kept:
            return False
    return True


def _on_ctx(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple | ast.List):
        return all(_on_ctx(e) for e in node.elts)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ctx"
    )


def _returned(node: ast.Return, index: int) -> ast.AST | None:
    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
    return values[index] if index < len(values) else ast.Constant(None)


def passed_through(target: Target) -> tuple[int, ...]:
    """The positions of forward's inputs to which every return of backward hands a
    grad_output unchanged (others get None); () when backward computes anything."""
    if target.op is not None or not target.is_function:
        return ()
    backward = parsed_function(getattr(target.obj, "backward", None))
    if backward is None:
        return ()
    arguments = backward.args
    grads = {a.arg for a in [*arguments.posonlyargs, *arguments.args][1:]}
    starred = arguments.vararg.arg if arguments.vararg else None
    nodes = own_nodes(backward)
    if _changed(nodes, grads | ({starred} if starred else set())):
        return ()
    returns = [node for node in nodes if isinstance(node, ast.Return)]
    positions: set[int] = set()
    for node in returns:
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        passed = [i for i, value in enumerate(values) if _unchanged(value, grads, starred)]
        if not passed or any(
            i not in passed and not _none(value) for i, value in enumerate(values)
        ):
            return ()
        positions.update(passed)
    return tuple(sorted(positions))


def straight_through(target: Target, choices: Sequence[Choice]) -> str | None:
    """PASSES_THROUGH where backward passes grad_output through to inputs forward's output
    does not move with, on the inferred inputs `choices`; else None."""
    return passes_through_on(target, [choice.item for choice in choices])


def passes_through_on(target: Target, items: Sequence[Any]) -> str | None:
    """`straight_through` on the inputs a spec's case lists (`items`: a recorded case's)."""
    positions = passed_through(target)
    if not positions or _returns_a_parameter(target, positions):
        return None
    try:
        return PASSES_THROUGH if _flat(target, items, positions) else None
    except Exception:  # forward refused a nudged input: no claim
        return None


def _flat(target: Target, items: Sequence[Any], positions: tuple[int, ...]) -> bool:
    """Whether forward's float outputs stay put when the inputs at `positions` move."""
    import torch

    from gradverify.inference.precision import cast
    from gradverify.inputs import build_inputs
    from gradverify.numerics import seeded
    from gradverify.spec.models import Case

    case = Case.model_validate({"name": "nudge", "inputs": list(items)})
    arguments = list(cast(build_inputs(case, 0)))
    moved = [
        i
        for i in positions
        if i < len(arguments)
        and isinstance(arguments[i], torch.Tensor)
        and arguments[i].is_floating_point()
    ]
    if not moved:
        return False
    before = _outputs(target, arguments)
    generator = seeded.generator(0)
    for i in moved:
        tensor = arguments[i].detach()
        direction = seeded.uniform(tensor.shape, generator, tensor.device, tensor.dtype)
        arguments[i] = tensor + _NUDGE * (direction + 0.5)
    after = _outputs(target, arguments)
    if not before or len(before) != len(after):
        return False
    return all(
        a.shape == b.shape and bool(((a - b).abs() <= 1e-3 * _NUDGE).all())
        for a, b in zip(before, after, strict=True)
    )


def _outputs(target: Target, arguments: Sequence[Any]) -> list[Any]:
    import torch

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        outputs = target.call(*arguments)
    items = outputs if isinstance(outputs, tuple | list) else (outputs,)
    return [o.detach() for o in items if isinstance(o, torch.Tensor) and o.is_floating_point()]


def _returns_a_parameter(target: Target, positions: tuple[int, ...]) -> bool:
    """Whether forward returns one of the inputs at `positions` itself: the identity, whose
    derivative a pass-through is (finite differences agree; nothing to declare)."""
    forward = parsed_function(getattr(target.obj, "forward", None))
    if forward is None:
        return True
    arguments = [a.arg for a in [*forward.args.posonlyargs, *forward.args.args][1:]]
    names = {arguments[i] for i in positions if i < len(arguments)}
    returns = [n for n in own_nodes(forward) if isinstance(n, ast.Return) and n.value]
    return any(_unchanged(node.value, names, None) for node in returns)


def _unchanged(node: ast.AST | None, names: set[str], starred: str | None) -> bool:
    """`grad`, `grads[0]`, `grad.clone()` and the like: a grad_output as it came."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return starred is not None and node.value.id == starred
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _UNCHANGED and _unchanged(node.func.value, names, starred)
    return False


def _none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _changed(nodes: Sequence[ast.AST], names: set[str]) -> bool:
    """Whether backward rebinds a grad_output or changes one in place (`grad.mul_(2)`)."""
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.For):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id in names for t in targets for n in ast.walk(t)):
                return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("_")
            and _receiver(node.func.value) in names
        ):
            return True
    return False


def _receiver(node: ast.AST) -> str | None:
    """The name a method is called on: `grad` of `grad.mul_(2)` and of `grads[0].mul_(2)`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def in_contract(target: Target, cases: Sequence[Case]) -> tuple[Case, ...]:
    """The cases of a straight-through `target` on which backward's passed-through
    grad_output has each receiving input's shape: it hands on the output's gradient as it
    is, so its contract is inputs shaped like the output (x1 [3, 5] beside out [5] is a
    guess outside it, not a broadcast backward forgot to reduce)."""
    from gradverify.inference.probe import probe

    positions = set(passed_through(target))
    if not positions:
        return tuple(cases)
    return tuple(case for case in cases if not positions & set(probe(target, case[1]).wrong_shape))
