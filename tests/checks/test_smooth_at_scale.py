"""Smooth Functions at scale: GELU, softplus and sigmoid pass in randomized mode, a wrong
second derivative is still named, the kink screen of a smooth Function costs no second
sampling pass, and a search after a pass judges kinks only where a projection differs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import torch

from gradverify.numerics.diagonal import diagonal_kinks
from gradverify.numerics.jacobian import forward_selection
from gradverify.numerics.localization import Examination, Problem
from gradverify.numerics.localizer import Localizer
from tests.functions import kinks_at_scale, smooth_at_scale

SMOOTH = ("Gelu", "GeluSetupContext", "Softplus", "SoftplusSetupContext", "Sigmoid")


@pytest.mark.parametrize("name", SMOOTH)
def test_a_correct_smooth_function_passes_both_orders_in_randomized_mode(run_spec, find, name):
    report = run_spec(
        f"""
        target: tests.functions.smooth_at_scale:{name}
        checks: [finite_difference, gradcheck, gradgradcheck]
        mode: randomized
        cases: [{{name: big, inputs: [{{shape: [200, 300]}}]}}]
        """
    )
    assert [r.status.value for r in report.results] == ["pass"] * 3, report.results


def test_a_wrong_second_derivative_at_scale_is_named(run_spec, only):
    result = only(
        run_spec(
            """
            target: tests.functions.smooth_at_scale:GeluWrongSecondDerivative
            checks: [finite_difference, gradgradcheck]
            mode: randomized
            cases: [{name: big, inputs: [{shape: [200, 300]}]}]
            """
        ),
        check="gradgradcheck",
    )
    assert result.status.value == "fail"
    assert "second derivative is wrong: d(the gradient of argument 0 (x) [" in result.message
    assert ") / d(argument 0 (x))" in result.message
    assert result.analytical is not None and result.numerical is not None
    assert abs(result.analytical - result.numerical) > 1e-3


class Counted:
    """A Function's forward as `diagonal_kinks` evaluates it, counting the calls."""

    def __init__(self, function: Any) -> None:
        self.function, self.calls = function, 0

    def __call__(self, *values: Any) -> Sequence[torch.Tensor]:
        self.calls += 1
        return [self.function.apply(*values)]


def _kinks(function: Any, x: torch.Tensor, base: bool) -> tuple[int, int]:
    """(elements near a kink, forward calls) of `diagonal_kinks` on one argument."""
    evaluate = Counted(function)
    at = function.apply(x) if base else None
    found = diagonal_kinks(evaluate, [x], 0, 1e-6, 1e-5, 1e-3, base=at)
    return found.count, evaluate.calls


def test_the_kink_screen_of_a_smooth_function_samples_once():
    x = torch.rand(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 4 - 2
    # Smooth: the five screening samples, four when the outputs at x are given; no second
    # pass over candidates, since there are none.
    assert _kinks(smooth_at_scale.GeluSetupContext, x, base=False) == (0, 5)
    assert _kinks(smooth_at_scale.GeluSetupContext, x, base=True) == (0, 4)
    # With kinks the candidates are sampled again (and the answer is the same with a base).
    x[:3] = torch.tensor([0.0, 1e-9, -1e-9], dtype=torch.float64)
    near, calls = _kinks(kinks_at_scale.MyReLU, x, base=False)
    assert near == 3 and calls >= 10
    assert _kinks(kinks_at_scale.MyReLU, x, base=True) == (3, calls - 2)


def _counted_run(run_spec: Any, checks: str) -> tuple[list[str], dict[str, int]]:
    """(verdicts, calls of CountedGelu's forward and backward) of `checks` at [200, 300], on
    the case's own draw (explore off: its draws would call forward again)."""
    smooth_at_scale.reset_calls()
    report = run_spec(
        f"""
        target: tests.functions.smooth_at_scale:CountedGelu
        checks: {checks}
        mode: randomized
        explore: 0
        cases: [{{name: big, inputs: [{{shape: [200, 300]}}]}}]
        """
    )
    return [r.status.value for r in report.results], dict(smooth_at_scale.CALLS)


def test_gradgradcheck_of_a_smooth_function_evaluates_backward_for_torch_and_projections_only(
    run_spec,
):
    verdicts, calls = _counted_run(run_spec, "[gradgradcheck]")
    assert verdicts == ["pass"]
    # Backward as a function: torch's fast gradgradcheck 6, the outputs the projections
    # start from 1, and two blocks (x, grad_output) of three projections' central
    # differences, 2 each: 19. The kink screen and the elementwise test (6 per block, 31 in
    # all) run only where a projection differs.
    assert calls["backward"] == 6 + 1 + 2 * 3 * 2


def test_finite_difference_of_a_smooth_function_evaluates_forward_for_projections_only(
    run_spec,
):
    verdicts, calls = _counted_run(run_spec, "[finite_difference]")
    assert verdicts == ["pass"]
    # Settling the inputs 7 (the outputs at x 1, the elementwise test 2, the kink screen
    # 4 with the outputs at x as its sample at offset 0), the problem's outputs 1, three
    # projections' central differences 2 each: 14 calls of forward (before: the screen
    # sampled x again, and the search ran its own elementwise test and kink screen, 21).
    assert calls["forward"] == 7 + 1 + 3 * 2
    assert calls["backward"] == 3  # one per projection


def _examine(function: Any, x: torch.Tensor, kinks_first: bool) -> tuple[Examination, int]:
    """(examination, forward calls) of the Localizer on one argument of `function`."""
    selection = forward_selection(function.apply, [x])
    assert selection is not None
    problem = Problem(
        selection.evaluate, (x,), (0,), selection.outputs, selection.layout, 1e-6, 1e-5, 1e-3
    )
    localizer = Localizer(problem, lambda salt: torch.Generator().manual_seed(salt))
    exam = localizer.examine(0, kinks_first=kinks_first)
    return exam, localizer.forward_calls


def _answer(exam: Examination) -> tuple[Any, ...]:
    return (
        exam.wrong, exam.excused, exam.near.tolist(), exam.projected, exam.spread,
        exam.exhausted,
    )  # fmt: skip


@pytest.mark.parametrize("function", [kinks_at_scale.MyReLU, smooth_at_scale.GeluSetupContext])
def test_kinks_judged_on_a_discrepancy_give_the_answer_of_kinks_judged_first(function):
    x = torch.rand(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 4 - 2
    x[:3] = torch.tensor([0.0, 1e-9, -1e-9], dtype=torch.float64)  # kinks of ReLU
    x.requires_grad_()
    first, eager_calls = _examine(function, x, kinks_first=True)
    lazy, lazy_calls = _examine(function, x, kinks_first=False)
    assert _answer(lazy) == _answer(first)
    if function is kinks_at_scale.MyReLU:
        assert len(first.excused) == 3  # a projection differs: the kinks are judged
        assert lazy_calls > eager_calls  # and the projections start again
    else:
        assert first.excused == [] and lazy.excused == []
        # no projection differs: no elementwise test (2 calls) and no kink screen (4)
        assert lazy_calls == eager_calls - 6
