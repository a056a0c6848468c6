"""Smooth Functions at scale: GELU, softplus and sigmoid pass in randomized mode, a wrong
second derivative is still named, and the kink screen of a smooth Function costs no
second sampling pass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import torch

from gradverify.numerics.diagonal import diagonal_kinks
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
