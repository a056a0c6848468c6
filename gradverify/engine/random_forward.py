"""A random forward whose backward is an unbiased estimator is not a bug.

The gradient checks run forward with the same random numbers in every call, so finite
differences measure the derivative of one sample (`loc + scale * eps` at this eps). Some
Functions draw random numbers in forward and return from backward another unbiased
estimator of the derivative of forward's expectation (pyro's optimal-transport sampler for
`scale_tril`, control variates): not this sample's derivative, right on average. So a
first-order failure about an argument of a forward that gives other outputs under other
seeds is judged again in expectation (gradverify.numerics.expectation): where backward's
mean over many forward seeds agrees with the mean pathwise derivative for linear losses of
the outputs, the failure becomes a warning that says so. One that agrees for quadratic
losses too is unbiased for any loss (a pass where the spec declares `gradient:
approximate`); one that does not is unbiased for the mean only, and the warning says that
(a forgotten dropout mask looks like this). Where the means disagree for linear losses,
the failure stays, with that evidence. A deterministic forward is never judged so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from gradverify.catalogue import FIRST_ORDER_CHECKS
from gradverify.engine.judging import JudgedCase
from gradverify.numerics.expectation import (
    DRAWS,
    Averages,
    OverBudget,
    expectation,
    varies_with_seed,
)
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status

BUDGET_SECONDS = 30.0  # per argument; a slower forward leaves the failure as it is


class RandomForward:
    """Judges the first-order failures of one case whose forward draws random numbers."""

    def __init__(self, case: JudgedCase) -> None:
        self.context = case.context
        self._random: bool | None = None
        self._verdicts: dict[int, Averages | str | None] = {}  # str: why not judged

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, a first-order failure of a random forward's backward that is right on
        average turned into a warning (a pass under `gradient: approximate`)."""
        return [self._judged(result) for result in results]

    def _judged(self, result: Result) -> Result:
        index = result.input_index
        if (
            result.status is not Status.FAIL
            or result.check not in FIRST_ORDER_CHECKS
            or index is None
        ):
            return result
        if result.explored is not None and result.explored.found:
            return result  # a further draw's inputs, not the case's
        if not self._is_random():
            return result
        if index not in self._verdicts:
            self._verdicts[index] = self._measured(index)
        verdict = self._verdicts[index]
        if verdict is None:
            return result
        if isinstance(verdict, str):
            return replace(result, notes=(*result.notes, verdict))
        if not verdict.linear.agrees:
            biased = (
                f"forward is random, and backward is biased on average: {verdict.linear.describe()}"
            )
            return replace(result, notes=(*result.notes, biased))
        return self._unbiased(result, verdict)

    def _unbiased(self, result: Result, verdict: Averages) -> Result:
        name = result.input_name or f"argument {result.input_index}"
        linear, quadratic = verdict.linear, verdict.quadratic
        said = (
            f"forward is random; backward's gradient of {name} is not the derivative of this "
            f"sample, but agrees with it on average over {linear.draws} draws"
        )
        notes = (*result.notes, f"linear losses: {linear.describe()}")
        notes = (*notes, f"quadratic losses: {quadratic.describe()}")
        notes = (*notes, f"on this sample: {result.message}")
        if not quadratic.agrees:  # a forgotten dropout mask, a misscaled spread: a bug
            mean_only = (
                f"forward is random; backward agrees with the sample's derivative on average "
                f"over {linear.draws} draws for linear losses of the outputs only, not for "
                f"quadratic ones ({quadratic.describe()}): unbiased for the mean only, as when "
                "backward forgets part of the sample (a dropout mask) or misscales the "
                "gradient of a spread (eps in a scale's gradient); an estimator meant for any "
                "loss (optimal transport, a control variate) agrees for both"
            )
            return replace(result, notes=(*result.notes, mean_only))
        said += (
            ", for linear and quadratic losses of the outputs alike (an unbiased estimator, "
            "e.g. optimal-transport or control-variate)"
        )
        if self.context.spec.gradient == "approximate":
            return replace(
                result, status=Status.PASS, message=f"{said}, as `gradient: approximate` says",
                hint=None, notes=notes, mismatch_map=None,
            )  # fmt: skip
        hint = (
            "if an estimator other than the sample's derivative is intended, declare "
            "`gradient: approximate` (gradverify explain approximate); if backward should "
            "differentiate the sample it returns (a reparameterized draw), it is a bug"
        )
        return self._warning(result, said, hint, notes)

    def _warning(self, result: Result, message: str, hint: str, notes: tuple[str, ...]) -> Result:
        """The warning, without the map of this sample's wrong entries (the notes say them)."""
        return replace(
            result, status=Status.WARN, message=message, hint=hint, notes=notes, mismatch_map=None
        )

    def _is_random(self) -> bool:
        if self._random is None:
            try:
                self._random = varies_with_seed(self.context.target.call, self.context.arguments)
            except Exception:  # the user's code failing here leaves the findings as they were
                self._random = False
        return self._random

    def _measured(self, index: int) -> Averages | str | None:
        """The verdict in expectation, why there is none (str), or None: not applicable."""
        context = self.context
        argument = context.arguments[index]
        if not isinstance(argument, torch.Tensor) or not argument.is_floating_point():
            return None
        tolerance = context.tolerance
        rtol = tolerance.rtol
        if context.spec.gradient == "approximate":
            rtol = max(rtol, context.spec.allowed_error)
        generator = context.generator(Salt.EXPECTATION)
        try:
            return expectation(
                context.target.call, context.arguments, index, generator, tolerance.eps,
                (tolerance.atol, rtol), BUDGET_SECONDS,
            )  # fmt: skip
        except OverBudget as over:
            return (
                f"forward is random; backward was not judged on average over {DRAWS} draws: "
                f"{over} (at most {BUDGET_SECONDS:g} s for all)"
            )
        except Exception:  # the user's code failing here leaves the finding as it was
            return None
