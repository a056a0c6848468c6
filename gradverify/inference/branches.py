"""Both sides of a comparison between inputs: where forward or backward branch on a
comparison whose operands derive from two or more parameters (`(p.abs() - h).max(-1) < 0`,
`x > t`, `torch.maximum(x, t)`), the base case's values rarely land on both sides (a box
whose half-extents are drawn from [-1, 1] holds no point). So an extent or size compared
with another input (`half_extents`, `radius`, `scale`) is drawn positive, and two more
cases put the compared tensor above and below the others: every point inside the box, then
(nearly) every point outside it.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.choice import POSITIVE, Choice, is_float_tensor
from gradverify.inference.dataflow import Flow, called_name, reads_shape, target_flow
from gradverify.inference.extra import Extra
from gradverify.target.syntax import own_nodes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# Names that hold an extent, a size or a scale: positive by their meaning, where compared.
EXTENT_NAMES = re.compile(
    r"(^|_)(half_?extents?|extents?|half_?sizes?|sizes?|radius|radii|scales?|widths?|heights?"
    r"|lengths?|bounds?|sigma|sigmas|std|margin|threshold|thresholds)($|_)",
    re.IGNORECASE,
)
# Calls that branch on which of two values is larger.
COMPARING_CALLS = frozenset({"maximum", "minimum", "fmax", "fmin", "clamp", "clip", "where"})
# The other tensors stay in [-1, 1]; the compared one goes above all of them, then below
# (inside [0.01, 0.1] for an extent, which stays positive: nearly every |x| lies past it).
ABOVE, BELOW, SMALL = (2.0, 3.0), (-3.0, -2.0), (0.01, 0.1)


def compared_groups(flow: Flow) -> list[frozenset[str]]:
    """Each set of two or more parameters that one comparison of forward or backward
    reads together (`q < 0` with q from p and h: {p, h}); comparisons of shapes left out."""
    groups: list[frozenset[str]] = []
    for function, in_backward in flow.functions():
        for node in own_nodes(function):
            operands = _operands(node)
            if not operands or any(reads_shape(operand) for operand in operands):
                continue
            together = frozenset().union(*(flow.sources(o, in_backward) for o in operands))
            if len(together) > 1 and together not in groups:
                groups.append(together)
    return groups


def _operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Compare):
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            return []  # `x is None`, `mode in (...)`: no order between values
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call) and called_name(node) in COMPARING_CALLS:
        if called_name(node) == "where":  # torch.where(cond, a, b): the condition only
            return [node.args[0]] if node.args else []
        return [*node.args, *(keyword.value for keyword in node.keywords)]
    return []


def compared_extents(target: Target) -> frozenset[str]:
    """The parameters named like an extent or a size that a comparison reads together
    with another input."""
    names = {name for group in compared_groups(target_flow(target)) for name in group}
    return frozenset(name for name in names if EXTENT_NAMES.search(name))


def positive_extents(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` with the compared extents drawn from the positive domain."""
    extents = compared_extents(target) if any(is_float_tensor(c) for c in choices) else frozenset()
    reason = "an extent compared with another input: positive"
    return [
        replace(c, low=POSITIVE[0], high=POSITIVE[1], reason=reason)
        if c.name in extents and is_float_tensor(c) and c.low < 0
        else c
        for c in choices
    ]


def both_sides(target: Target, base: Sequence[Choice]) -> Iterator[Extra]:
    """For each comparison between float tensors: the compared one (an extent, else the
    last of them) above every other, then below."""
    floats = {c.name: i for i, c in enumerate(base) if is_float_tensor(c)}
    seen: set[str] = set()
    for group in compared_groups(target_flow(target)):
        tensors = [name for name in floats if name in group]
        if len(tensors) < 2:
            continue
        extents = [name for name in tensors if EXTENT_NAMES.search(name)]
        compared = (extents or tensors)[-1]
        if compared in seen:
            continue
        seen.add(compared)
        index = floats[compared]
        below = SMALL if extents else BELOW
        for low, high in (ABOVE, below):
            choice = replace(base[index], low=low, high=high, reason="both sides of a comparison")
            changed = [*base[:index], choice, *base[index + 1 :]]
            yield Extra(f"{compared} in [{low:g}, {high:g}]", changed)
