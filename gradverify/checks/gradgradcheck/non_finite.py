"""A NaN or infinite second derivative where the first passed: its own hint, read from the
ops backward's source applies (`sqrt`, `**`, `log` at 0, inside `torch.where` or not) and
where forward's output is 0, never "not differentiable as written"."""

from __future__ import annotations

import ast
import inspect
import math
from dataclasses import replace

from gradverify.checks.shared.case import CaseContext
from gradverify.inputs import fresh_copies
from gradverify.numerics.diagnosis import SINGULAR_AT_ZERO, nan_second_derivative
from gradverify.numerics.jacobian import differentiable_outputs
from gradverify.results import Result
from gradverify.target.syntax import called_name, own_nodes, parsed_function
from gradverify.usercode import UserCodeError, call_forward

# The checks whose failure on the case makes a wrong second derivative follow from it.
FIRST_ORDER = ("backward", "finite_difference", "gradcheck")


def non_finite_hinted(context: CaseContext, results: list[Result]) -> list[Result]:
    """A NaN or infinite second derivative where the first passed gets its own hint (ops
    singular at 0, often inside `torch.where`), not that backward is not differentiable."""
    if any(r.failed for r in context.earlier if r.check in FIRST_ORDER):
        return results  # the first derivative is already wrong: that hint stands
    non_finite = [
        r.failed and (
            (r.analytical is not None and not math.isfinite(r.analytical))
            or (r.analytical is None and "nan" in r.message.lower())
        )
        for r in results
    ]  # fmt: skip
    if not any(non_finite):
        return results
    ops, inside_where, place = _singular_ops(context)
    hint = nan_second_derivative(ops, inside_where, place, _zero_outputs(context))
    return [
        replace(result, hint=hint) if flagged else result
        for result, flagged in zip(results, non_finite, strict=True)
    ]


def _singular_ops(context: CaseContext) -> tuple[frozenset[str], bool, str]:
    """The ops singular at 0 that backward's source applies, whether it also calls
    `torch.where`, and where backward is (`backward (line 41)`): read from its syntax."""
    backward = getattr(context.target.obj, "backward", None) if context.target.is_function else None
    node = parsed_function(backward) if backward is not None else None
    if backward is None or node is None:
        return frozenset(), False, "backward"
    ops: dict[str, int] = {}
    where = False
    for item in own_nodes(node):
        name = called_name(item) if isinstance(item, ast.Call) else None
        if name in SINGULAR_AT_ZERO:
            ops.setdefault(name, getattr(item, "lineno", 0))
        elif isinstance(item, ast.BinOp) and isinstance(item.op, ast.Pow):
            ops.setdefault("**", item.lineno)
        where = where or name == "where"
    first = getattr(inspect.unwrap(backward), "__code__", None)
    if not ops or first is None:
        return frozenset(ops), where, "backward"
    line = first.co_firstlineno + min(ops.values()) - 1
    return frozenset(ops), where, f"backward (line {line})"


def _zero_outputs(context: CaseContext) -> str:
    """`3 of 8 elements` where forward's differentiable outputs are exactly 0 on the case's
    inputs (a saved output at 0 is where ops such as `**` lose their derivative), else ""."""
    try:
        outputs = call_forward(context.target.call, fresh_copies(context.arguments))
    except UserCodeError:
        return ""
    values = [output.detach() for _, output in differentiable_outputs(outputs)]
    zeros = sum(int((value == 0).sum()) for value in values)
    total = sum(value.numel() for value in values)
    return f"{zeros} of {total} element{'s' if total != 1 else ''}" if zeros else ""
