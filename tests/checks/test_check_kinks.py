"""Kinks: correct Functions at non-differentiable points warn, never fail; real bugs still fail."""

from __future__ import annotations

import pytest
import torch

from gradverify.numerics.kinks import OFFSETS, nondifferentiable_rows, samples

CLIPPED_AT_KINKS = """
target: gradverify.examples.activations:ClippedReLU
checks: [finite_difference, gradcheck, gradgradcheck]
cases:
  - name: at_kinks
    inputs:
      - {values: [-1.5, 0.0, 0.5, 1.0, 1.5]}
      - 1.0
"""


@pytest.fixture(scope="module")
def clipped_at_kinks(run_spec):
    return run_spec(CLIPPED_AT_KINKS)


@pytest.mark.parametrize("check", ["finite_difference", "gradcheck", "gradgradcheck"])
def test_clipped_relu_at_zero_and_clip_value_warns_in_every_value_check(
    clipped_at_kinks, only, check
):
    result = only(clipped_at_kinks, check=check)
    assert result.status.value == "warn"
    assert result.input_index == 0
    assert "non-differentiable" in result.message


def test_the_warning_names_the_element_and_the_one_sided_slopes(clipped_at_kinks, only):
    result = only(clipped_at_kinks, check="finite_difference")
    assert result.element == (1,)  # x == 0.0
    assert result.analytical == 0.0
    assert result.numerical == pytest.approx(0.5)
    assert "left slope 0, right slope 1" in result.message
    assert "lies between them" in result.message
    assert "1 more element" in result.message  # x == 1.0, the clip value


def test_gradcheck_reruns_with_the_kinks_held_fixed(clipped_at_kinks, only):
    result = only(clipped_at_kinks, check="gradcheck")
    assert any("held fixed" in note for note in result.notes)


def test_a_forgotten_mask_still_fails_next_to_excused_kinks(run_spec, only):
    # Two elements above clip_val: a region hint needs more than one wrong element.
    report = run_spec(
        CLIPPED_AT_KINKS.replace("activations:ClippedReLU", "buggy:ClippedReLUForgotMask").replace(
            "1.0, 1.5]", "1.0, 1.5, 2.0]"
        )
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.element in ((4,), (5,))  # x > clip_val: analytical 1, numerical 0
    assert "x > 1" in (result.hint or "")  # the excused kink at x == 1 is no counter-evidence
    assert any("excused" in note for note in result.notes)


def test_a_value_outside_the_one_sided_slopes_fails_and_says_so(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:ReLUWrongAtZero
        checks: [finite_difference, gradcheck]
        cases:
          - name: at_zero
            inputs: [{values: [-1.0, 0.0, 1.0]}]
        """
    )
    for check in ("finite_difference", "gradcheck"):
        result = only(report, check=check)
        assert result.status.value == "fail"
        assert result.element == (1,)
        assert result.analytical == 2.0
        assert "only at non-differentiable points" in result.hint


def test_abs_at_zero_passes_and_its_jumping_gradient_warns_in_gradgradcheck(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:Abs
        checks: [finite_difference, gradcheck, gradgradcheck]
        cases:
          - name: at_zero
            inputs: [{values: [-0.5, 0.0, 0.25]}]
        """
    )
    # Central differences of |x| at 0 are 0, the subgradient backward gives: nothing to excuse.
    assert only(report, check="finite_difference").status.value == "pass"
    assert only(report, check="gradcheck").status.value == "pass"
    # The gradient sign(x) jumps at 0: its derivative there is no bug either.
    second = only(report, check="gradgradcheck")
    assert second.status.value == "warn"
    assert second.element == (1,)


def test_relu_within_eps_of_its_kink_warns_not_fails(run_spec, only):
    report = run_spec(
        """
        target: gradverify.examples.activations:ReLU
        checks: [finite_difference]
        cases:
          - name: near
            inputs: [{values: [-1.0, 1.0e-7, -3.0e-7, 1.0]}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "warn"
    assert result.element == (1,)


def test_smooth_functions_with_high_curvature_are_not_kinks():
    def evaluate(x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.exp(20 * x)]

    x = torch.tensor([0.3, -0.2, 1.0], dtype=torch.float64)
    for column in range(3):
        values = samples(evaluate, (x,), 0, column, 1e-6)
        tolerance = torch.full((3,), 1e-5)
        assert not nondifferentiable_rows(values, 1e-6, tolerance).any()


def test_a_jump_to_non_finite_values_is_a_kink():
    def evaluate(x: torch.Tensor) -> list[torch.Tensor]:
        return [torch.where(x > 0, torch.log(x), torch.full_like(x, float("-inf")))]

    values = samples(evaluate, (torch.tensor([1e-7], dtype=torch.float64),), 0, 0, 1e-6)
    assert not torch.isfinite(values[0]).all()
    assert nondifferentiable_rows(values, 1e-6, torch.tensor([1e-5])).all()
    assert len(OFFSETS) == values.shape[0]
