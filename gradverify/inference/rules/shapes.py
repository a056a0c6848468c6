"""Shapes the layouts miss:

- each tensor argument on its own at ranks 1 to 4, the others as a layout gives them, where
  no layout ran (a bilinear lookup's grid [H, W, C] beside points [N, 2]);
- a last dim as wide as forward's literal subscripts read (`xy[:, 0]`, `xy[:, 1]`: 2);
- two inputs that share a role at different sizes (x [N, D], y [M, D] with N ≠ M): a
  backward that counts one where the other belongs is right whenever N = M;
- a batch of square matrices, where the base case is one.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.choice import Choice, is_float_tensor, with_choice
from gradverify.inference.extra import Extra
from gradverify.inference.reading.dataflow import Flow, target_flow
from gradverify.inference.rules.plans import ELEMENTWISE, Plan
from gradverify.target.syntax import called_name, literal_int, own_nodes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# A shape of each rank, its sizes apart (H ≠ W ≠ C), unlike the layouts' shapes.
RANKED = ((5,), (3, 4), (3, 4, 5), (2, 3, 4, 5))
# The layouts whose other arguments the ranks are tried beside.
BESIDE: tuple[tuple[int, ...] | str, ...] = (ELEMENTWISE, "linear")
BATCH = 2
READS = "forward reads"  # the reason a tensor got an axis as wide as forward reads it
# At most this many assignments in the fallback: it runs only where no layout ran, but a
# Function of many tensors would otherwise try each at every rank beside each layout.
MOST_TRIALS = 32


def components(flow: Flow) -> dict[str, tuple[int, int]]:
    """parameter -> (axis, size) for a parameter forward subscripts with literals in one
    axis (`xy[:, 0]`, `xy[:, 1]` -> (1, 2); `q[..., 3]` -> (-1, 4)); two at least."""
    found: dict[str, tuple[int, int]] = {}
    if flow.forward is None:
        return found
    for node in own_nodes(flow.forward):
        read = _unbound(node, flow.parameters)
        if read is not None:  # x, y = xy.unbind(-1): as xy[..., 1]
            found.setdefault(read[0], (read[1], read[2]))
            continue
        if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name):
            continue
        if node.value.id not in flow.parameters:
            continue
        read_at = _component(node.slice)
        if read_at is None:
            continue
        axis, index = read_at
        known = found.get(node.value.id)
        if known is not None and known[0] != axis:
            continue
        found[node.value.id] = (axis, max(index + 1, known[1] if known else 0))
    return {name: read for name, read in found.items() if read[1] >= 2}


def _unbound(node: ast.AST, parameters: tuple[str, ...]) -> tuple[str, int, int] | None:
    """(parameter, axis, count) of `a, b = p.unbind(axis)` (axis a literal, -1 by default
    for `unbind(-1)`, 0 for `unbind()`)."""
    if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
        return None
    call, targets = node.value, node.targets[0]
    if called_name(call) != "unbind" or not isinstance(targets, ast.Tuple):
        return None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name) or receiver.id not in parameters:
        return None
    given = call.args[0] if call.args else next((k.value for k in call.keywords), None)
    axis = literal_int(given) if given is not None else 0
    return (receiver.id, axis, len(targets.elts)) if axis is not None else None


def _component(index: ast.AST) -> tuple[int, int] | None:
    """(axis, literal) of `[:, 1]` (1, 1) or `[..., 2]` (-1, 2); None for anything else."""
    parts = index.elts if isinstance(index, ast.Tuple) else []
    if len(parts) < 2:
        return None
    last = parts[-1]
    if not isinstance(last, ast.Constant) or type(last.value) is not int or last.value < 0:
        return None
    leading = parts[:-1]
    if len(leading) == 1 and isinstance(leading[0], ast.Constant) and leading[0].value is ...:
        return -1, last.value
    if all(_whole(part) for part in leading):
        return len(leading), last.value
    return None


def _whole(part: ast.AST) -> bool:
    return isinstance(part, ast.Slice) and part.lower is None and part.upper is None


def with_components(
    target: Target, choices: Sequence[Choice], kept_only: bool = False
) -> list[Choice]:
    """`choices` with each float tensor's subscripted axis as wide as forward reads it;
    with `kept_only`, only those the base case got so (another case's other rank keeps
    `points [2]` at two coordinates: `points [3, 2]`, not `[3, 5]`)."""
    read = components(target_flow(target)) if any(is_float_tensor(c) for c in choices) else {}
    fitted = []
    for choice in choices:
        axis, size = read.get(choice.name, (None, 0))
        if kept_only and not choice.reason.startswith(READS):
            axis = None
        if (
            axis is not None
            and is_float_tensor(choice)
            and -len(choice.shape) <= axis < len(choice.shape)
        ):
            shape = list(choice.shape)
            shape[axis] = size
            choice = replace(choice, shape=tuple(shape), reason=f"{READS} {size} along it")
        fitted.append(choice)
    return fitted


def each_rank(target: Target, plans: Sequence[Plan]) -> Iterator[list[Choice]]:
    """Where no layout ran: each tensor argument at each rank on its own, the others as
    a layout gives them, each subscripted axis as wide as forward reads it."""
    seen: set[tuple[tuple[int, ...], ...]] = set()
    for layout in BESIDE:
        beside = [plan.choice(layout) for plan in plans]
        trials = [beside]
        for index, choice in enumerate(beside):
            if is_float_tensor(choice):
                trials += [
                    with_choice(beside, index, replace(choice, shape=shape)) for shape in RANKED
                ]
        for trial in trials:
            fitted = with_components(target, trial)
            key = tuple(c.shape for c in fitted)
            if key not in seen and len(seen) < MOST_TRIALS:
                seen.add(key)
                yield fitted


def other_sizes(base: Sequence[Choice]) -> Iterator[Extra]:
    """The tensors after the first that share its shape, of rank 2 or more, one row longer
    (x [2, 4], y [3, 4]): two inputs in one role, N ≠ M."""
    first = next((c for c in base if is_float_tensor(c)), None)
    if first is None or len(first.shape) < 2:
        return
    later = [
        i
        for i, c in enumerate(base)
        if is_float_tensor(c) and c is not first and c.shape == first.shape
    ]
    if not later:
        return
    shape = (first.shape[0] + 1, *first.shape[1:])
    changed = [replace(c, shape=shape) if i in later else c for i, c in enumerate(base)]
    label = ", ".join(f"{base[i].name} {list(shape)}" for i in later)
    yield Extra(label, changed)  # a gradient misfit here may be a contract: the case is dropped


def batched_squares(base: Sequence[Choice]) -> Iterator[Extra]:
    """A batch of the square matrices the base case holds (x [3, 3] -> x [2, 3, 3])."""
    first = next((c for c in base if is_float_tensor(c)), None)
    if first is None or len(first.shape) != 2 or first.shape[0] != first.shape[1]:
        return
    shape = (BATCH, *first.shape)
    changed = [
        replace(c, shape=shape) if is_float_tensor(c) and c.shape == first.shape else c
        for c in base
    ]
    yield Extra(f"{first.name} {list(shape)}", changed)
