"""The `gradgradcheck` check: second derivatives, with first-order findings taken into account."""

from __future__ import annotations

import pytest

DETACHED = "tests.functions.second_order:DetachedBackwardSquare"
CHECK = "gradgradcheck"


def test_first_order_right_second_order_wrong(bugs_report, find, only):
    for first_order in ("forward", "backward", "finite_difference", "gradcheck"):
        assert [r.status.value for r in find(bugs_report, target=DETACHED, check=first_order)] == [
            "pass"
        ], first_order
    result = only(bugs_report, target=DETACHED, check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert result.output_index is None  # d(grad x)/dx, not d/d(grad_output)
    assert result.element is not None and len(result.element) == 1
    assert result.analytical == 0.0  # x.detach() hides the second derivative
    assert result.numerical != pytest.approx(0.0)
    assert "second derivative is wrong" in result.message
    assert "second is silently wrong" in result.hint
    assert "once_differentiable" in result.hint
    assert "already wrong" not in result.hint


def test_without_first_order_checks_the_hint_does_not_blame_them(run_spec, only):
    report = run_spec(
        f"""
        target: {DETACHED}
        checks: [gradgradcheck]
        cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert "already wrong" not in result.hint
    assert "finite_difference" in result.hint
    assert "once_differentiable" in result.hint


def test_when_the_first_derivative_is_wrong_the_hint_says_fix_that_first(bugs_report, find):
    results = find(bugs_report, target="tests.functions.structural_bugs:NaNGradient", check=CHECK)
    assert results
    for result in results:
        assert result.status.value == "fail"
        assert "fix that first" in result.hint
        assert "silently" not in result.hint


def test_a_second_derivative_by_grad_output_names_the_output(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.mapping:DetachedGradOutputSquare
        cases: [{name: vector, inputs: [{shape: [3]}]}]
        """
    )
    for first_order in ("backward", "finite_difference", "gradcheck"):
        assert only(report, check=first_order).status.value == "pass"
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.input_index == 0  # whose gradient it is
    assert "d(the gradient of argument 0 (x) [" in result.message
    assert ") / d(grad_output 0)" in result.message
    assert result.analytical == 0.0
    assert result.numerical != pytest.approx(0.0)
    assert "silently wrong" in result.hint


def test_second_order_correct_functions_pass(run_spec, find):
    report = run_spec(
        """
        functions:
          - target: tests.functions.correct:TwoOutputs
            checks: [gradgradcheck]
            cases: [{name: vector, inputs: [{shape: [3]}]}]
          - target: gradverify.examples.swish:Swish
            checks: [gradgradcheck]
            cases: [{name: beta, inputs: [{shape: [3]}, {shape: []}]}]
        """
    )
    assert [r.status.value for r in find(report, check=CHECK)] == ["pass", "pass"]
