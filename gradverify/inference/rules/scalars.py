"""A number forward gets by default and uses in arithmetic with its tensors
(`torch.exp(alpha * x)`, entmax's `alpha=1.5`) is also tried as a 0-d tensor that requires
grad: a Function that accepts one owes it a gradient, which the number never checks. The
case is kept only where backward gives that tensor a gradient; a Function that takes it for
a constant (returns None for it) was not written for one.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gradverify.inference.choice import LITERAL, TENSOR, Choice, is_float_tensor, with_choice
from gradverify.inference.extra import Extra
from gradverify.inference.reading.dataflow import Flow, target_flow
from gradverify.target.syntax import own_nodes

if TYPE_CHECKING:
    from gradverify.inference.rules import Trial
    from gradverify.target.loaded import Target

# How far the tensor's value may lie from the default: near it, inside forward's domain.
SPREAD = 0.25
SMALLEST_SPREAD = 1e-3  # a range the spec accepts (low < high) around a tiny default


def in_arithmetic(flow: Flow) -> frozenset[str]:
    """The parameters forward combines with another parameter's value by +, -, *, /, **."""
    found: set[str] = set()
    if flow.forward is None:
        return frozenset()
    for node in own_nodes(flow.forward):
        if not isinstance(node, ast.BinOp):
            continue
        left, right = flow.sources(node.left), flow.sources(node.right)
        for one, other in ((left, right), (right, left)):
            found |= {name for name in one if other - {name}}
    return frozenset(found)


def as_tensors(target: Target, base: Sequence[Choice], trial: Trial) -> Iterator[Extra]:
    """Each float default forward uses in arithmetic with tensors, as a 0-d tensor near it
    that requires grad, where backward gives it a gradient (`trial` runs forward and
    backward on a guess: the search's probe)."""
    if not any(is_float_tensor(c) for c in base):
        return
    used = in_arithmetic(target_flow(target))
    for index, choice in enumerate(base):
        if choice.kind != LITERAL or type(choice.value) is not float or choice.name not in used:
            continue
        value = choice.value
        if not math.isfinite(value):
            continue
        spread = max(SPREAD * abs(value), SMALLEST_SPREAD) if value else SPREAD
        tensor = Choice(
            choice.name, TENSOR, (), reason=f"a 0-d tensor near the default {value!r}",
            low=value - spread, high=value + spread,
        )  # fmt: skip
        changed = with_choice(base, index, tensor)
        outcome = trial(target, changed)
        if outcome.stage == "done" and index not in outcome.none + outcome.wrong_shape:
            yield Extra(f"{choice.name} [] near {value:g}", changed)
