"""Gradient modes: surrogate (with and without expected_gradient), approximate, once_differentiable."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VALUE_CHECKS = ("finite_difference", "gradcheck", "gradgradcheck")


@pytest.fixture(scope="module")
def surrogates(run_spec):
    return run_spec(ROOT / "specs" / "surrogates.yaml")


@pytest.mark.parametrize("name", ["ClampWithGrad", "ReplaceGrad", "StraightThroughSign"])
def test_bundled_surrogates_pass_with_value_checks_skipped(surrogates, find, name):
    results = find(surrogates, target=f"gradverify.examples.surrogates:{name}")
    assert results
    assert not [r for r in results if r.status.value == "fail"], results
    for check in VALUE_CHECKS:
        (result,) = [r for r in results if r.check == check]
        assert result.status.value == "skip"
        assert "surrogate" in result.message
    assert {"forward", "backward"} <= {r.check for r in results if r.status.value == "pass"}


def test_expected_gradient_is_compared_when_given(surrogates, find):
    passed = find(surrogates, check="expected_gradient", status="pass")
    assert {r.target.rsplit(":", 1)[1] for r in passed} == {"ReplaceGrad", "StraightThroughSign"}


def test_a_wrong_expected_gradient_fails_naming_the_element(run_spec, only):
    report = run_spec(
        """
        target: gradverify.examples.surrogates:StraightThroughSign
        gradient: surrogate
        expected_gradient: tests.functions.kinks_and_modes:sign_gradient_wrong
        checks: [expected_gradient]
        cases:
          - name: wide
            inputs: [{values: [-2.0, -0.5, 0.5, 2.0]}]
        """
    )
    result = only(report, check="expected_gradient")
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert result.element in {(0,), (3,)}  # |x| > 1: backward gives 0, the "intended" 1
    assert result.analytical == 0.0


def test_a_straight_through_estimator_in_exact_mode_fails_with_a_pointer(run_spec, find):
    report = run_spec(
        """
        target: gradverify.examples.surrogates:StraightThroughSign
        gradient: exact
        checks: [finite_difference]
        cases:
          - name: vector
            inputs: [{shape: [8], low: -2.0, high: 2.0}]
        """
    )
    (result,) = find(report, check="finite_difference")
    assert result.status.value == "fail"
    assert "gradient: surrogate" in result.hint


def test_expected_gradient_outside_surrogate_mode_is_a_spec_error():
    from gradverify.errors import SpecError
    from gradverify.spec.load import parse_spec

    with pytest.raises(SpecError) as raised:
        parse_spec(
            "target: a:B\nexpected_gradient: a:c\ncases: [{name: x, inputs: []}]\n", "s.yaml"
        )
    assert "surrogate" in raised.value.render()


@pytest.mark.parametrize(("max_error", "status"), [("1.0e-3", "pass"), ("1.0e-4", "fail")])
def test_approximate_gradients_are_judged_against_max_error(run_spec, only, max_error, status):
    report = run_spec(
        f"""
        target: tests.functions.kinks_and_modes:SlightlyOffSquare
        gradient: approximate
        max_error: {max_error}
        checks: [finite_difference, gradcheck]
        cases:
          - name: vector
            inputs: [{{shape: [5], low: 0.5, high: 1.5}}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == status
    assert result.max_rel_error == pytest.approx(5e-4, rel=0.05)
    assert "max_error" in result.message
    assert only(report, check="gradcheck").status.value == "skip"


def test_once_differentiable_skips_gradgradcheck_with_the_reason(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:OnceDifferentiableSquare
        checks: [finite_difference, gradcheck, gradgradcheck]
        cases:
          - name: vector
            inputs: [{shape: [4]}]
        """
    )
    assert only(report, check="gradcheck").status.value == "pass"
    result = only(report, check="gradgradcheck")
    assert result.status.value == "skip"
    assert "once_differentiable" in result.message


def test_second_derivative_silently_wrong_names_both_remedies(bugs_report, only):
    result = only(
        bugs_report,
        target="tests.functions.second_order:DetachedBackwardSquare",
        check="gradgradcheck",
    )
    assert result.status.value == "fail"
    assert "silently wrong" in result.hint
    assert "once_differentiable" in result.hint
    assert "differentiable" in result.hint
