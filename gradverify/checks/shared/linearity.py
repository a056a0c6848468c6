"""Whether backward is linear in grad_output, as every derivative is.

A vector-Jacobian product scales with the vector: backward(s·g) = s·backward(g). Clipping
the gradient, normalizing it or any other surrogate breaks that, while a wrong constant
(a mean where a sum belongs) keeps it. The Jacobian alone cannot tell the two apart when
every entry has the same size (`analytical = numerical / 4` is also a clip at 0.25), so a
diagnosis asks backward once more, with grad_output scaled down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.numerics.jacobian import analytical_jacobians, forward_selection
from gradverify.usercode import UserCodeError

# A power of two: scaling by it is exact in floating point, so a linear backward gives the
# same values to the last bit, and a clip at any level up to 1000 lets the scaled ones through.
SCALE = 2.0**-10

Linearity = Callable[[], bool | None]


def backward_linearity(
    context: CaseContext, arguments: Sequence[Any], index: int, analytical: torch.Tensor
) -> Linearity:
    """A lazy probe: True (linear), False (not linear) or None (unknown) for argument `index`.

    `analytical` is the Jacobian block backward gave with unit grad_outputs; the probe runs
    only when a diagnosis needs it, and at most once.
    """
    answer: list[bool | None] = []

    def probe() -> bool | None:
        if not answer:
            answer.append(_probe(context, arguments, index, analytical))
        return answer[0]

    return probe


def _probe(
    context: CaseContext, arguments: Sequence[Any], index: int, analytical: torch.Tensor
) -> bool | None:
    try:
        again = _jacobian(context, arguments, index, 1.0)
        scaled = _jacobian(context, arguments, index, SCALE)
    except UserCodeError:
        return None  # the failure at hand says more than a crash while probing
    if again is None or scaled is None or again.shape != analytical.shape:
        return None
    tol = context.tolerance
    allowed = tol.atol + tol.rtol * analytical.abs()
    if bool(((again - analytical).abs() > 0.01 * allowed).any()):
        return None  # two runs differ: nondeterminism would read as nonlinearity
    departure = (scaled / SCALE - analytical).abs()
    if bool((departure > allowed).any()):
        return False
    if bool((departure <= 0.01 * allowed).all()):
        return True
    return None


def _jacobian(
    context: CaseContext, arguments: Sequence[Any], index: int, scale: float
) -> torch.Tensor | None:
    """backward's Jacobian block for argument `index`, with every grad_output times `scale`."""
    selection = forward_selection(context.target.call, arguments)
    if selection is None:
        return None
    # Autograd multiplies the grad_output by `scale` on its way back into the Function.
    outputs = [output * scale for output in selection.outputs]
    return analytical_jacobians(outputs, arguments, [index])[index].to(torch.float64)
