"""Regressions from the issue-10 sweep: realistic Functions of the new forms, run end to end."""

from __future__ import annotations

import pytest

SWEEP = "tests.functions.sweep"


def test_a_function_without_outputs_is_a_forward_failure_not_an_internal_error(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:returns_none
        cases: [{{name: case, inputs: [{{shape: [4]}}]}}]
        """
    )
    result = only(report, check="forward")
    assert result.status.value == "fail"
    assert "no tensor" in result.message


def test_a_bool_output_beside_the_result_is_no_gradcheck_error(run_spec, find):
    report = run_spec(
        f"""
        target: {SWEEP}:ReluWithMask
        checks: [gradcheck, gradgradcheck]
        cases: [{{name: case, inputs: [{{shape: [6]}}]}}]
        """
    )
    statuses = {result.check: result.status.value for result in find(report)}
    assert statuses == {"gradcheck": "pass", "gradgradcheck": "pass"}, report.results


def test_a_wrong_gradient_beside_a_bool_output_still_fails_gradcheck(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:ReluWithMaskDoubled
        checks: [gradcheck]
        cases: [{{name: case, inputs: [{{shape: [6]}}]}}]
        """
    )
    result = only(report, check="gradcheck")
    assert result.status.value == "fail"
    assert result.input_index == 0


def _weighted_squares(run_spec, target, shape, checks):
    return run_spec(
        f"""
        target: {SWEEP}:{target}
        checks: {checks}
        cases: [{{name: case, inputs: [{{shape: {shape}}}, {{shape: {shape}}}]}}]
        """
    )


@pytest.mark.parametrize("shape", [[5], [3000]])  # full and randomized mode
def test_a_correct_scalar_loss_passes_func(run_spec, only, shape):
    report = _weighted_squares(run_spec, "WeightedSquares", shape, "[func]")
    assert only(report, check="func").status.value == "pass"


@pytest.mark.parametrize("shape", [[5], [3000]])
def test_a_gradient_that_ignores_grad_output_is_named_by_func_not_blamed_on_setup_context(
    run_spec, only, shape
):
    report = _weighted_squares(run_spec, "WeightedSquaresIgnoresGrad", shape, "[func]")
    result = only(report, check="func")
    assert result.status.value == "fail"
    assert result.input_index == 1
    assert "does not scale with grad_output" in result.message
    assert "setup_context" not in (result.hint or "")


def test_func_folds_a_gradient_that_ignores_grad_output_under_gradcheck(run_spec, only):
    report = _weighted_squares(run_spec, "WeightedSquaresIgnoresGrad", [5], "[gradcheck, func]")
    gradcheck = only(report, check="gradcheck")
    assert gradcheck.status.value == "fail"
    assert "grad_output" in gradcheck.message
    assert only(report, check="func").same_as == "gradcheck"


def test_a_backward_under_no_grad_is_said_in_plain_words_by_gradgradcheck(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:SinBackwardWithoutGrad
        checks: [gradgradcheck]
        cases: [{{name: case, inputs: [{{shape: [5]}}]}}]
        """
    )
    result = only(report, check="gradgradcheck")
    assert result.status.value == "fail"
    assert "torch.no_grad()" in result.message
    assert "expected to be zero" not in result.message


COMPLEX_LINEAR = "[{shape: [3, 4], dtype: complex128}, {shape: [2, 4], dtype: complex128}]"


@pytest.mark.parametrize(
    ("target", "inputs"),
    [
        ("ComplexLinear", COMPLEX_LINEAR),
        ("SquaredModulus", "[{shape: [5], dtype: complex128}]"),
        ("SquaredModulus", "[{shape: [3000], dtype: complex128}]"),  # randomized mode
    ],
)
def test_complex_functions_for_torch_func_pass_func(run_spec, only, target, inputs):
    report = run_spec(
        f"""
        target: {SWEEP}:{target}
        checks: [func]
        cases: [{{name: case, inputs: {inputs}}}]
        """
    )
    result = only(report, check="func")
    assert result.status.value == "pass", result.message
    assert result.message.startswith("torch.func grad, vjp")


def test_func_names_the_complex_element_and_part_a_conjugation_bug_breaks(run_spec, only, find):
    report = run_spec(
        f"""
        target: {SWEEP}:ComplexLinearForgotConj
        checks: [finite_difference, func]
        cases: [{{name: case, inputs: {COMPLEX_LINEAR}}}]
        """
    )
    result = only(report, check="func", input_index=0)
    assert result.status.value == "fail"
    assert result.same_as == "finite_difference"
    assert len(result.element) == 2  # x's own shape [3, 4], not the pairs [3, 4, 2]
    assert "part of the gradient" in result.message
    assert not find(report, check="func", input_index=1)  # w's gradient is right


def test_a_number_beside_the_result_is_batched_by_vmap_as_unbatched(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:ScaleAndFactor
        checks: [vmap]
        cases: [{{name: case, inputs: [{{shape: [4]}}, 0.5]}}]
        """
    )
    result = only(report, check="vmap")
    assert result.status.value == "pass", result.message
    assert "gradients of 1 argument" in result.message


def test_finite_difference_still_fails_a_wrong_gradient_beside_a_number(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:ScaleAndFactorWrongGrad
        checks: [vmap, finite_difference]
        cases: [{{name: case, inputs: [{{shape: [4]}}, 0.5]}}]
        """
    )
    assert only(report, check="vmap").status.value == "pass"
    assert only(report, check="finite_difference").status.value == "fail"
