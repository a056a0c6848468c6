"""Both sides of a comparison between inputs: where forward or backward branch on a
comparison whose operands derive from two or more parameters (`(p.abs() - h).max(-1) < 0`,
`x > t`, `torch.maximum(x, t)`), the base case's values rarely land on both sides (a box
whose half-extents are drawn from [-1, 1] holds no point). So an extent or size compared
with another input (`half_extents`, `radius`, `scale`) is drawn positive, and two more
cases put the compared tensor above and below the others: every point inside the box, then
(nearly) every point outside it.

An ordered pair (`lo < hi`, gradverify.inference.rules.order) is never the one moved: the other
tensor a comparison reads goes above both, then below both.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import NUMBER, POSITIVE, Choice, is_float_tensor, with_choice
from gradverify.inference.extra import Extra
from gradverify.inference.reading.called import Helper, called_helpers
from gradverify.inference.reading.dataflow import Flow, reads_shape, sources_in, target_flow
from gradverify.inference.rules.order import ordered_names
from gradverify.target.syntax import FunctionNode, called_name, own_nodes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# Names that hold an extent, a size or a scale: positive by their meaning, where compared.
EXTENT_NAMES = re.compile(
    r"(^|_)(half_?extents?|extents?|half_?sizes?|sizes?|radius|radii|scales?|widths?|heights?"
    r"|lengths?|bounds?|sigma|sigmas|std|margin|threshold|thresholds)($|_)",
    re.IGNORECASE,
)
# Names of modules whose functions are called (`torch.maximum`), not tensors.
MODULES = frozenset({"torch", "F", "functional", "nn", "np", "math"})
# Calls that branch on which of two values is larger.
COMPARING_CALLS = frozenset({"maximum", "minimum", "fmax", "fmin", "clamp", "clip", "where"})
# The other tensors stay in [-1, 1]; the compared one goes above all of them, then below
# (inside [0.01, 0.1] for an extent, which stays positive: nearly every |x| lies past it).
ABOVE, BELOW, SMALL = (2.0, 3.0), (-3.0, -2.0), (0.01, 0.1)
# Numbers that are dims or sizes, never a value compared with.
SHAPE_NAMES = frozenset({"dim", "axis", "dims", "keepdim", "n", "k"})


def compared_groups(
    flow: Flow, compares: bool = True, calls: bool = True, helpers: Sequence[Helper] = ()
) -> list[frozenset[str]]:
    """Each set of two or more parameters that one comparison of forward or backward (or
    of a function they call, `helpers`) reads together (`q < 0` with q from p and h:
    {p, h}), or with `calls` one clamp-like call (`torch.maximum(x, t)`, `x.clamp(lo, hi)`);
    comparisons of shapes left out."""
    groups: list[frozenset[str]] = []
    readers: list[tuple[FunctionNode, Callable[[ast.AST], frozenset[str]]]] = [
        (function, functools.partial(flow.sources, in_backward=in_backward))
        for function, in_backward in flow.functions()
    ]
    readers += [
        (helper.node, functools.partial(sources_in, derived=helper.derived)) for helper in helpers
    ]
    for function, sources in readers:
        for node in own_nodes(function):
            wanted = compares if isinstance(node, ast.Compare) else calls
            operands = _operands(node) if wanted else []
            if not operands or any(reads_shape(operand) for operand in operands):
                continue
            together = frozenset().union(*(sources(o) for o in operands))
            if len(together) > 1 and together not in groups:
                groups.append(together)
    return groups


def target_helpers(target: Target) -> tuple[Helper, ...]:
    """The functions a Function's forward and backward call (gradverify.inference.reading.called)."""
    if target.op is not None or not target.is_function:
        return ()
    forward = getattr(target.obj, "forward", None)
    backward = getattr(target.obj, "backward", None)
    try:
        return _cached_helpers(forward, backward, tuple(target.parameters))
    except (RecursionError, ValueError, OSError):
        return ()


@functools.lru_cache(maxsize=64)
def _cached_helpers(forward: Any, backward: Any, parameters: tuple[str, ...]) -> tuple[Helper, ...]:
    return called_helpers(forward, backward, parameters)


def _operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Compare):
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            return []  # `x is None`, `mode in (...)`: no order between values
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call) and called_name(node) in COMPARING_CALLS:
        if called_name(node) == "where":  # torch.where(cond, a, b): the condition only
            return [node.args[0]] if node.args else []
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        mine = [receiver] if isinstance(receiver, ast.Name) and receiver.id not in MODULES else []
        return [*mine, *node.args, *(keyword.value for keyword in node.keywords)]
    return []


def compared_extents(target: Target) -> frozenset[str]:
    """The parameters named like an extent or a size that a comparison reads together
    with another input."""
    groups = compared_groups(target_flow(target), helpers=target_helpers(target))
    names = {name for group in groups for name in group}
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
    last of them) above every other, then below. For one between a tensor and a number
    inference chose (`x.max() > t`): that number above the tensor's values, then below."""
    floats = {c.name: i for i, c in enumerate(base) if is_float_tensor(c)}
    seen: set[str] = set()
    flow, helpers = target_flow(target), target_helpers(target)
    # a clamp's bounds (clamp(-qn, qp)) are the wide case's and the bound names' to reach
    bounds = compared_groups(flow, compares=False, helpers=helpers)
    seen |= {name for group in bounds for name in group}
    seen |= ordered_names(target)  # lo=2.5 past hi=0.5 breaks lo < hi
    for group in compared_groups(flow, calls=False, helpers=helpers):
        if len([name for name in floats if name in group]) == 1:
            yield from _numbers_compared(base, group, seen)
    seen = set()
    ordered = ordered_names(target)
    for group in compared_groups(flow, helpers=helpers):
        tensors = [name for name in floats if name in group]
        # an ordered pair (lo < hi) keeps its order: the other tensor goes past both
        free = [name for name in tensors if name not in ordered]
        if len(tensors) < 2 or not free:
            continue
        extents = [name for name in free if EXTENT_NAMES.search(name)]
        compared = (extents or free)[-1]
        if compared in seen:
            continue
        seen.add(compared)
        index = floats[compared]
        below = SMALL if extents else BELOW
        for low, high in (ABOVE, below):
            choice = replace(base[index], low=low, high=high, reason="both sides of a comparison")
            changed = with_choice(base, index, choice)
            yield Extra(f"{compared} in [{low:g}, {high:g}]", changed)


def _numbers_compared(
    base: Sequence[Choice], group: frozenset[str], seen: set[str]
) -> Iterator[Extra]:
    """The numbers inference chose (not forward's defaults: the wide case reaches past
    those) that a comparison reads with a tensor, at the middle of ABOVE and of BELOW."""
    for index, choice in enumerate(base):
        value = choice.value
        if choice.kind != NUMBER or choice.name not in group or choice.name in seen:
            continue
        if type(value) not in (int, float) or choice.name in SHAPE_NAMES:
            continue
        seen.add(choice.name)
        below = SMALL if EXTENT_NAMES.search(choice.name) else BELOW
        for low, high in (ABOVE, below):
            other = round((low + high) / 2, 3)
            changed = replace(choice, value=other, reason="both sides of a comparison")
            yield Extra(f"{choice.name}={other:g}", with_choice(base, index, changed))
