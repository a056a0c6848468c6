"""Whether a case is checked in the kernel's own precision rather than in float64, and why.

The float64 checks (finite_difference's full Jacobians, torch's gradcheck and gradgradcheck)
cast the case to float64. That is no check of a kernel that refuses float64 (a Triton or
CUDA launcher raises for it), nor of one that computes in float32 whatever it is given
(central differences at eps = 1e-6 then measure its float32 rounding). For a case declared
in float32, float16 or bfloat16, two trial forwards tell:

- forward on float64 copies raises, where on the declared arguments it runs: it refuses float64;
- forward on float64 copies nudged below float32's resolution returns float32 numbers only:
  it computes in float32.

Either way `finite_difference` checks the case in float32 (`checks/finite_difference/
own_precision.py`), and gradcheck and gradgradcheck, which need float64, do not apply. A
float16 or bfloat16 case is checked in float32 when forward accepts float32; where it does
not, only `reference:` can check it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext, dtype_name
from gradverify.inputs import fresh_copies
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward, first_line

LOW = (torch.float32, torch.float16, torch.bfloat16)
# A relative nudge below float32's resolution (2^-24) and far above float64's (2^-53).
NUDGE = 2.0**-30


@dataclass(frozen=True)
class OwnPrecision:
    """A case to check in `working` (float32), or in no dtype gradverify can difference in
    (`working` None: forward accepts only half precision), and the evidence."""

    declared: torch.dtype
    working: torch.dtype | None
    evidence: str  # "forward refuses float64 (TypeError: ...)"

    @property
    def note(self) -> str:
        where = (
            f"checked in {dtype_name(self.working)}"
            if self.working
            else "not checked by differences"
        )
        return f"{self.evidence}: {where}"


def own_precision(context: CaseContext) -> OwnPrecision | None:
    """The case's own-precision plan, or None when the float64 checks apply (once per case)."""
    memo = context.memo
    if not memo.own_precision_probed:
        memo.own_precision = _probe(context)
        memo.own_precision_probed = True
    plan = memo.own_precision
    assert plan is None or isinstance(plan, OwnPrecision)
    return plan


def exact_own_precision(context: CaseContext) -> OwnPrecision | None:
    """The case's own-precision plan where the spec declares an exact gradient, else None:
    an approximate or surrogate gradient is never checked in its own precision."""
    return own_precision(context) if context.spec.gradient == "exact" else None


def needs_float64(context: CaseContext, check: str, instead: str = "") -> Result | None:
    """The skip of a check that needs float64 on a case checked in its own precision (not
    applicable, with the evidence), else None. `instead`: what checks it then."""
    plan = exact_own_precision(context)
    if plan is None:
        return None
    if not instead:
        working = dtype_name(plan.working) if plan.working is not None else ""
        instead = (
            f"`finite_difference` checks backward in {working}"
            if working
            else "`reference` can check it in its own precision"
        )
    message = f"needs float64, and {plan.evidence}: {instead}"
    return context.result(check, Status.SKIP, message, applies=False)


def declared_low_dtype(arguments: tuple[Any, ...]) -> torch.dtype | None:
    """The coarsest of float32/float16/bfloat16 among the floating tensor arguments that
    require grad (None: none is in a lower dtype)."""
    dtypes = [
        a.dtype
        for a in arguments
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.requires_grad
    ]
    low = [dtype for dtype in dtypes if dtype in LOW]
    return max(low, key=lambda dtype: torch.finfo(dtype).eps, default=None)


def _probe(context: CaseContext) -> OwnPrecision | None:
    declared = declared_low_dtype(context.arguments)
    if declared is None or any(
        isinstance(a, torch.Tensor) and a.is_complex() for a in context.arguments
    ):
        return None
    call = context.target.call
    try:
        call_forward(call, fresh_copies(context.arguments))
    except UserCodeError:
        return None  # forward fails in the declared dtype: the forward check says so
    wide = fresh_copies(context.arguments, torch.float64)
    try:
        with torch.no_grad():
            outputs = call_forward(call, _nudged(wide))
    except UserCodeError as error:
        evidence = (
            f"forward refuses float64 ({type(error.error).__name__}: {first_line(error.error)})"
        )
        return OwnPrecision(declared, _working(context, declared), evidence)
    if _float32_values(outputs):
        evidence = "forward computes in float32: on float64 inputs its outputs are float32 numbers"
        return OwnPrecision(declared, torch.float32, evidence)
    return None


def _working(context: CaseContext, declared: torch.dtype) -> torch.dtype | None:
    """float32 when forward accepts it, else None (a half-precision-only forward)."""
    if declared == torch.float32:
        return torch.float32
    try:
        call_forward(context.target.call, fresh_copies(context.arguments, torch.float32))
    except UserCodeError:
        return None
    return torch.float32


def _nudged(arguments: tuple[Any, ...]) -> tuple[Any, ...]:
    """Floating arguments times (1 + 2^-30): values no float32 number equals."""
    return tuple(
        (a * (1 + NUDGE)).detach().requires_grad_(a.requires_grad)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in arguments
    )


def _float32_values(outputs: tuple[Any, ...]) -> bool:
    """Whether every floating output is a float32 number (and at least one is not 0)."""
    floating = [
        o.detach() for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()
    ]
    if not floating or not any(bool((o != 0).any()) for o in floating):
        return False
    return all(
        o.dtype in LOW or bool((o.to(torch.float32).to(o.dtype) == o).all()) for o in floating
    )
