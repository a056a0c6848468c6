"""`applies=False`: a check that cannot apply to this Function is counted, not shown.

A skip the user declared or that the Function's form implies (no jvp rule, no `reference:`,
`gradient: surrogate`, @once_differentiable) does not apply; a coverage gap (no argument
that requires grad) still applies, so the report shows it.
"""

from __future__ import annotations

import pytest

SPEC = """
functions:
  - target: tests.functions.correct:Square
    cases: [{name: plain, inputs: [{shape: [4]}]}]
  - target: tests.functions.forward_mode:SquareWithJvp
    checks: [jvp]
    cases: [{name: with_jvp, inputs: [{shape: [4]}]}]
  - target: tests.functions.kinks_and_modes:OnceDifferentiableSquare
    checks: [gradgradcheck]
    cases: [{name: once, inputs: [{shape: [4]}]}]
  - target: gradverify.examples.surrogates:StraightThroughSign
    gradient: surrogate
    expected_gradient: gradverify.examples.surrogates:straight_through_sign_gradient
    cases: [{name: declared, inputs: [{shape: [8]}]}]
  - target: gradverify.examples.surrogates:ClampWithGrad
    gradient: surrogate
    cases: [{name: unchecked, inputs: [{shape: [8]}, -1.0, 1.0]}]
  - target: tests.functions.correct:Square
    checks: [finite_difference]
    cases: [{name: complex, inputs: [{shape: [3], dtype: complex128}]}]
  - target: tests.functions.correct:Square
    cases: [{name: frozen, inputs: [{shape: [4], requires_grad: false}]}]
"""


@pytest.fixture(scope="module")
def report(run_spec):
    return run_spec(SPEC)


def _not_applicable(report, case):
    return {r.check for r in report.results if r.case == case and not r.applies}


def test_what_the_function_lacks_does_not_apply(report):
    # a classic Function: no jvp, no vmap rule, not transformable by torch.func, not a custom op
    assert _not_applicable(report, "plain") == {"jvp", "vmap", "func", "opcheck"}
    assert not any(r.applies is False for r in report.results if r.status.value != "skip")


def test_a_defined_jvp_applies(report, only):
    assert only(report, case="with_jvp", check="jvp").applies


def test_once_differentiable_leaves_no_second_derivative_to_check(report, only):
    result = only(report, case="once", check="gradgradcheck")
    assert (result.status.value, result.applies) == ("skip", False)


def test_a_declared_surrogate_skips_value_checks_silently(report):
    assert {"finite_difference", "gradcheck", "gradgradcheck"} <= _not_applicable(
        report, "declared"
    )


def test_a_surrogate_whose_values_nothing_checks_says_so(report, only):
    result = only(report, case="unchecked", check="finite_difference")
    assert result.status.value == "skip" and result.applies  # shown: give expected_gradient
    assert "expected_gradient" in result.message
    assert "gradcheck" in _not_applicable(report, "unchecked")


def test_coverage_gaps_still_apply(report, find):
    # Complex values are no gap any more: finite_difference checks their parts (and finds
    # that Square's backward lacks the conjugate complex x needs; see test_complex.py).
    complex_results = find(report, case="complex", check="finite_difference")
    assert complex_results and all(r.applies for r in complex_results)
    frozen = find(report, case="frozen", status="skip")
    assert {r.check for r in frozen if r.applies} >= {"backward", "finite_difference"}
