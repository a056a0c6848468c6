"""The case a check runs on, the Check protocol, and how a check reports a crash."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import torch

from gradverify.catalogue import FIRST_ORDER_CHECKS
from gradverify.inputs import promoted_arguments
from gradverify.numerics import seeded
from gradverify.results import Result, Status
from gradverify.spec.models import FunctionSpec, Tolerance
from gradverify.target.loaded import Target
from gradverify.usercode import UserCodeError, first_line


@dataclass
class CaseMemo:
    """What the checks of one case work out once and share (the context itself is frozen,
    and `dataclasses.replace` hands every check the same memo)."""

    output_elements: int | None = None  # differentiable output elements, from one forward
    # run-to-run spread of backward at rounding level (atomics) that `backward` measured and
    # the later checks allow as `tolerance.nondet_tol` (0: two runs gave the same gradients)
    nondeterminism: float = 0.0
    forward_raised: bool = False  # that forward raised: the size is unknown
    # checks/shared/own_precision.py: whether the case is checked in its own precision
    own_precision_probed: bool = False
    own_precision: object = None  # its OwnPrecision, or None: the float64 checks apply


@dataclass(frozen=True)
class CaseContext:
    """One case of one target, as every check sees it."""

    target: Target
    case: str
    arguments: tuple[Any, ...]  # in the declared dtypes; checks copy before use
    spec: FunctionSpec
    seed: int
    spec_file: str | None = None
    spec_line: int | None = None
    earlier: tuple[Result, ...] = field(default=())  # results of checks run before on this case
    memo: CaseMemo = field(default_factory=CaseMemo, compare=False, repr=False)

    @property
    def tolerance(self) -> Tolerance:
        """The spec's tolerances, with `nondet_tol` raised to the rounding-level spread of
        backward between two runs that `backward` measured (atomics), if that is larger."""
        tolerance = self.spec.tolerance
        if self.memo.nondeterminism > tolerance.nondet_tol:
            return tolerance.model_copy(update={"nondet_tol": self.memo.nondeterminism})
        return tolerance

    def result(self, check: str, status: Status, message: str = "", **fields: Any) -> Result:
        index = fields.get("input_index")
        if index is not None and "input_name" not in fields:
            fields["input_name"] = self.target.argument_name(index)
        return Result(
            target=self.target.spec,
            case=self.case,
            check=check,
            status=status,
            message=message,
            spec_file=self.spec_file,
            spec_line=self.spec_line,
            **fields,
        )

    def first_order_passed(self, checks: Sequence[str] = FIRST_ORDER_CHECKS) -> bool:
        """Whether a first-order check of `checks` passed on this case and none failed: then
        backward's values are the derivative's on these inputs, and no hint may say otherwise."""
        earlier = [r for r in self.earlier if r.check in checks]
        passed = any(r.status is Status.PASS for r in earlier)
        return passed and not any(r.failed for r in earlier)

    def describe_argument(self, index: int) -> str:
        """`argument 1 (beta)`: position among all of forward's arguments, and its name."""
        name = self.target.argument_name(index)
        return f"argument {index} ({name})" if name else f"argument {index}"

    def generator(self, salt: int) -> torch.Generator:
        """A CPU generator for `salt`'s draws (`numerics/seeded.py` places them)."""
        return seeded.generator(self.seed + 7919 * salt)


class Check(Protocol):
    """A check: a stable id (its entry in gradverify.catalogue says what it checks) and a
    run over one case."""

    id: ClassVar[str]

    def run(self, context: CaseContext) -> list[Result]: ...


def crash_result(context: CaseContext, check: str, error: UserCodeError) -> Result:
    """A crash of the user's code: a failure of this check, or a skip when an earlier check
    already failed on the structure this one relies on (so the report says it once)."""
    frames = error.frames if len(error.frames) > 1 else ()
    broken = [r for r in context.earlier if r.failed and r.check in ("forward", "backward")]
    if broken and check not in {r.check for r in broken}:
        # Say the error again only if the failure above does not already say it.
        said = any(first_line(error.error) in " ".join((r.message, *r.details)) for r in broken)
        return not_run(context, check, broken[0].check, "" if said else f" ({error})")
    return context.result(check, Status.FAIL, str(error), details=frames, **error.source)


def not_run(context: CaseContext, check: str, failing: str, why: str = "") -> Result:
    """A check skipped because `failing`, which it relies on, already fails for this case:
    the report says that finding once, and points at it from here."""
    return context.result(
        check,
        Status.SKIP,
        f"not run: `{failing}` already fails for this case{why}",
        same_as=failing,
    )


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype as findings spell it: `float32`, not `torch.float32`."""
    return str(dtype).removeprefix("torch.")


RETURNS_NOTHING = (
    "the op returns nothing (its schema declares no output), so there is no gradient to check"
)


def op_returns_nothing(context: CaseContext) -> bool:
    """A custom op whose schema returns nothing (`-> ()`): it works only through the arguments
    it declares written (mutates_args), which is legitimate; no gradient flows out of it."""
    op = context.target.op
    return op is not None and not op._schema.returns


def no_gradient_to_check(context: CaseContext, check: str) -> Result | None:
    """A gradient check's result for an op that returns nothing (it does not apply), else None."""
    if not op_returns_nothing(context):
        return None
    message = f"no output is differentiable: {RETURNS_NOTHING}"
    return context.result(check, Status.SKIP, message, applies=False)


def promotion_notes(context: CaseContext, arguments: Sequence[Any]) -> tuple[str, ...]:
    return tuple(
        f"{context.describe_argument(index)} promoted from {dtype_name(dtype)} "
        f"to {'complex128' if dtype.is_complex else 'float64'} for this check"
        for index, dtype in promoted_arguments(arguments)
    )
