"""A surrogate backward the code declares, for inferred inputs: the words around the
Function (gradverify.inference.reading.intent.said), or a parameter only backward reads, which can
only steer the gradient on purpose. Inference checks such a Function as `gradient:
surrogate`, the declaration its author left out. What forward's construction says, argument
by argument, is judged where the checks run (gradverify.engine.intent); a backward that
passes grad_output through is no evidence at all (a forgotten mask looks the same).

A user's own spec is never changed here (its author says `gradient: surrogate` or gets the
hint).

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gradverify.inference.reading.intent import AS_IS, built_as_surrogate, ignored_by_forward, said
from gradverify.target.syntax import own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.inference.cases import Case
    from gradverify.target.loaded import Target

# Inference.surrogate's prefix for a parameter only backward reads (a gradient's scale).
STEERED = "only backward reads "


def surrogate_note(surrogate: str) -> str:
    """The note's sentence on an inferred `gradient: surrogate`, whoever declared it."""
    if surrogate.startswith(STEERED):
        return (
            f"Checked as a surrogate gradient, `gradient: surrogate`: forward's output does not "
            f"depend on {surrogate.removeprefix(STEERED)}, which only backward reads, to steer "
            "the gradient (a moving average, a scale)"
        )
    return f"Checked as a surrogate gradient, `gradient: surrogate`: {surrogate}"


def surrogate_comment(surrogate: str) -> str:
    """`init`'s comment beside an inferred `gradient: surrogate`."""
    if surrogate.startswith(STEERED):
        return f"{surrogate}: it steers the gradient"
    return surrogate


def surrogate_in_code(target: Target) -> str | None:
    """What the code says of a surrogate backward, read without running it: the words
    around the Function (its docstrings, name, comments, module and callers) or a parameter
    only backward reads; else None. Inference and `record` both ask it."""
    return said(target) or steering(target)


def steering(target: Target) -> str | None:
    """`only backward reads ewma` where forward's output does not depend on a parameter
    (forward only keeps it for backward, or never reads it) and backward still uses it:
    reads it and gives it no gradient (None), or gives it one that is no chain rule at all,
    free of grad_output (`regularization * (M - R)`). Either way it can only steer the
    gradient on purpose (pyro's moving average of the input, a gradient-reversal layer's
    scale, roma's Procrustes regularization); else None."""
    from gradverify.inference.reading.dataflow import target_flow

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
        if not returns or not ignored_by_forward(flow.forward, name):
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


def _unchanged(node: ast.AST | None, names: set[str], starred: str | None) -> bool:
    """`grad`, `grads[0]`, `grad.clone()` and the like: a grad_output as it came."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return starred is not None and node.value.id == starred
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in AS_IS and _unchanged(node.func.value, names, starred)
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
    """The cases on which backward's passed-through grad_output has the shape of each
    receiving input that forward's construction makes a surrogate (gradverify.inference.
    intent.built_as_surrogate): such a backward hands on the output's gradient as it is, so
    its contract is inputs shaped like the output (x1 [3, 5] beside out [5] is a guess outside
    it). Where forward is smooth in the input (`x + bias`), a gradient left unreduced is a
    bug, and its cases stay."""
    from gradverify.inference.search.probe import probe

    positions = {i for i in passed_through(target) if built_as_surrogate(target, i)}
    if not positions:
        return tuple(cases)
    return tuple(case for case in cases if not positions & set(probe(target, case[1]).wrong_shape))
