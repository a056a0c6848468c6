"""Regressions from the issue-10 sweep: realistic Functions of the new forms, run end to end."""

from __future__ import annotations

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
