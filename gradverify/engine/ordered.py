"""A failure on a case that breaks an order the Function's code states (`lo < hi`, as its
docstring says; gradverify.inference.rules.order) says so: a spec's case is the user's word and
is judged as it is, but one drawn outside the Function's contract (lo from [2, 3] above hi
from [0.5, 0.6], as an earlier `record` could add) more likely shows the case wrong than
backward. Inference and `record` no longer write such a case; a spec written before keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gradverify.engine.judging import JudgedCase
from gradverify.inference.rules.order import Order, read_orders
from gradverify.results import Result, Status
from gradverify.spec.models import Case, LiteralInput, TensorInput
from gradverify.target.loaded import Target


class OrderNotes:
    """Says of each failure of one case that the case breaks an order, if it breaks one."""

    def __init__(self, case: JudgedCase) -> None:
        self.target, self.case = case.target, case.case
        self._read = False  # the target's orders are read at the case's first failure
        self._broken: tuple[Order, str, str] | None = None

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, each failure with a note naming the order the case breaks."""
        if not any(result.status is Status.FAIL for result in results):
            return list(results)
        broken = self._broken_order()
        if broken is None:
            return list(results)
        order, lower, upper = broken
        note = (
            f"this case draws {order.lower} from {lower}, not below {order.upper} from {upper}, "
            f"though {order.reason}: a case outside the Function's contract; fix or delete it"
        )
        return [
            replace(result, notes=(*result.notes, note)) if result.status is Status.FAIL else result
            for result in results
        ]

    def _broken_order(self) -> tuple[Order, str, str] | None:
        if not self._read:
            self._broken, self._read = broken_order(self.target, self.case), True
        return self._broken


def broken_order(target: Target, case: Case) -> tuple[Order, str, str] | None:
    """The first order whose lower argument `case` may draw at or above its upper one, with
    the two spans as the spec gives them."""
    orders = read_orders(target)
    if not orders:
        return None
    spans = {
        name: span
        for name, item in zip(target.parameters, case.inputs, strict=False)
        if (span := _span(item)) is not None
    }
    for order in orders:
        lower, upper = spans.get(order.lower), spans.get(order.upper)
        if lower is not None and upper is not None and lower[1] >= upper[0]:
            return order, _shown(lower), _shown(upper)
    return None


def _span(item: Any) -> tuple[float, float] | None:
    """The values a drawn tensor input or a number may take (explicit values: none read)."""
    if isinstance(item, TensorInput):
        return (item.low, item.high) if item.values is None else None
    value = item.value if isinstance(item, LiteralInput) else item
    if type(value) in (int, float):
        return float(value), float(value)
    return None


def _shown(span: tuple[float, float]) -> str:
    low, high = span
    return f"{low:g}" if low == high else f"[{low:g}, {high:g}]"
