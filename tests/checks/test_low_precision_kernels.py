"""Kernels checked in their own precision: a Function that refuses float64, or computes in
float32 whatever it is given, gets a float32 verdict from `finite_difference` (directional
differences with a measured error bound), and the float64-only checks step aside."""

from __future__ import annotations

import pytest

KERNELS = "tests.functions.kernels"
FLOAT64_ONLY = ("gradcheck", "gradgradcheck")


def spec(target: str, inputs: str, extra: str = "") -> str:
    return f"""
        target: {KERNELS}:{target}
        {extra}
        cases:
          - name: case
            inputs: [{inputs}]
        """


SILU_MUL = "{shape: [3, 4], dtype: float32}, {shape: [3, 4], dtype: float32}"
VECTOR = "{shape: [8], dtype: float32}"


@pytest.fixture(scope="module")
def float32_only(run_spec):
    return run_spec(spec("SiLUMulFloat32", SILU_MUL))


def test_a_correct_float32_only_function_passes_with_the_default_checks(float32_only, find):
    assert [r for r in float32_only.results if r.status.value in ("fail", "warn")] == []
    checked = find(float32_only, check="finite_difference", status="pass")
    assert [(r.input_index, r.input_name) for r in checked] == [(0, "a"), (1, "b")]
    assert all("matches in float32" in r.message for r in checked)
    assert all("forward refuses float64 (TypeError" in r.notes[0] for r in checked)


@pytest.mark.parametrize("check", FLOAT64_ONLY)
def test_the_float64_only_checks_do_not_apply_and_say_float32(float32_only, only, check):
    result = only(float32_only, check=check)
    assert result.status.value == "skip" and result.applies is False
    assert "needs float64" in result.message
    assert "`finite_difference` checks backward in float32" in result.message


def test_a_float32_only_twin_with_a_dropped_term_fails_naming_the_argument(run_spec, find):
    report = run_spec(spec("SiLUMulFloat32DroppedTerm", SILU_MUL))
    failed = find(report, status="fail")
    assert [(r.check, r.input_index, r.input_name) for r in failed] == [
        ("finite_difference", 0, "a")
    ]
    (result,) = failed
    assert "wrong in float32 at element" in result.message
    assert result.element is not None and len(result.element) == 2
    assert abs(result.analytical - result.numerical) > 0.01
    assert "loosening `tolerance` would hide the bug" in result.hint
    assert find(report, check="finite_difference", input_index=1)[0].status.value == "pass"


@pytest.fixture(scope="module")
def computes_in_float32(run_spec):
    return run_spec(spec("GeluInFloat32", VECTOR))


def test_a_correct_function_computing_in_float32_passes_in_float32(computes_in_float32, only):
    assert [r for r in computes_in_float32.results if r.status.value in ("fail", "warn")] == []
    result = only(computes_in_float32, check="finite_difference")
    assert result.status.value == "pass" and "in float32" in result.message
    assert result.notes[0].startswith("forward computes in float32")
    assert only(computes_in_float32, check="gradcheck").applies is False


def test_its_buggy_twin_fails_naming_the_argument_not_rounding(run_spec, find):
    report = run_spec(spec("GeluInFloat32DroppedTerm", VECTOR))
    failed = find(report, status="fail")
    assert [(r.check, r.input_name) for r in failed] == [("finite_difference", "x")]
    assert "errors of the size of float32 rounding" not in (failed[0].hint or "")
    assert failed[0].mismatched == 8  # every element: the dropped term is nowhere zero


def test_a_float64_case_of_a_function_computing_in_float32_still_fails_as_lost_precision(
    run_spec, only
):
    report = run_spec(spec("GeluInFloat32", "{shape: [8]}", extra="checks: [finite_difference]"))
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert "float32 rounding" in result.hint


def test_a_wrong_branch_in_a_large_argument_is_found_by_halving(run_spec, only):
    report = run_spec(
        spec("TanhFloat32WrongBranch", "{shape: [20, 30], dtype: float32}",
             extra="checks: [finite_difference]")
    )  # fmt: skip
    result = only(report, check="finite_difference")
    assert result.status.value == "fail" and result.input_name == "x"
    assert "localized by halving" in result.message
    x = result_input(run_spec, "TanhFloat32WrongBranch", "{shape: [20, 30], dtype: float32}")
    assert x[result.element].item() < -0.5  # the wrong branch: only below -0.5


def result_input(run_spec, target, inputs):
    """The case's first argument, as the engine built it."""
    from gradverify.inputs import build_inputs
    from gradverify.spec.load import parse_spec

    (entry,) = parse_spec(spec(target, inputs).replace("\n        ", "\n"), "inline.yaml")
    return build_inputs(entry.spec.cases[0], entry.spec.seed)[0]


def test_a_correct_large_float32_argument_passes(run_spec, only):
    report = run_spec(
        spec(
            "TanhFloat32", "{shape: [20, 30], dtype: float32}", extra="checks: [finite_difference]"
        )
    )
    assert only(report, check="finite_difference").status.value == "pass"


def test_a_float16_case_is_checked_in_float32_when_forward_accepts_it(run_spec, only):
    report = run_spec(
        spec("TanhFloat32", "{shape: [6], dtype: float16}", extra="checks: [finite_difference]")
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "pass" and "in float32" in result.message
    assert "argument 0 (x) promoted from float16 to float32 for this check" in result.notes


def test_a_half_only_forward_says_what_it_saw_and_asks_for_a_reference(run_spec, only):
    report = run_spec(spec("HalfOnly", "{shape: [6], dtype: float16}"))
    result = only(report, check="finite_difference")
    assert result.status.value == "skip"
    assert "forward refuses float64" in result.message and "refuses float32" in result.message
    assert "reference: " in result.hint and "low_precision: {k: 2, floor_ulps: 4}" in result.hint
    for check in FLOAT64_ONLY:
        skipped = only(report, check=check)
        assert skipped.applies is False and "`reference`" in skipped.message


@pytest.fixture(scope="module")
def sign_flip(run_spec):
    return run_spec(spec("SoftplusFloat32SignFlip", VECTOR, extra=f"reference: {KERNELS}:softplus"))


@pytest.mark.parametrize("check", ["finite_difference", "reference"])
def test_a_sign_flipped_below_zero_gets_the_sign_and_the_region(sign_flip, only, check):
    result = only(sign_flip, check=check, status="fail")
    assert result.input_name == "x"
    assert "wrong only where x < 0" in result.hint
    assert "the opposite sign there" in result.hint


def test_explain_points_at_the_float32_verdict_not_at_loosening_tolerance():
    from gradverify.catalogue import CATALOGUE

    (entry,) = [e for e in CATALOGUE if e.id == "finite_difference"]
    text = " ".join(entry.explanation.split())
    assert "is checked in float32 instead" in text
    assert "loosening `tolerance` would hide real bugs" in text
    assert "loosen `tolerance` (atol/rtol)" not in text


def test_a_kink_at_an_input_warns_as_a_kink_in_float32(run_spec, only):
    report = run_spec(
        spec("ClampFloat32", "{values: [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0], dtype: float32}",
             extra="checks: [finite_difference]")
    )  # fmt: skip
    result = only(report, check="finite_difference")
    assert result.status.value == "warn"
    assert result.message.startswith("non-differentiable at argument 0 (x), element [1]")
    assert "in float32" in result.message and "1 more element" in result.message


def test_far_steps_that_see_a_linear_function_are_no_evidence(run_spec, only):
    # logsumexp at 1000 is the max for steps of hundreds: the discrepancy there is steady,
    # like a bug's, but it shrinks as the steps do; only the steps where it does count.
    report = run_spec(
        spec("LogSumExpFloat32", "{values: [1000.0, 1001.0, 999.5, 1000.25], dtype: float32}",
             extra="checks: [finite_difference]")
    )  # fmt: skip
    assert only(report, check="finite_difference").status.value == "pass"


def test_a_nan_gradient_fails_in_float32(run_spec, only):
    report = run_spec(
        spec("ReciprocalFloat32NaNAtZero", "{shape: [4], low: 1.0, high: 2.0, dtype: float32}",
             extra="checks: [finite_difference]")
    )  # fmt: skip
    result = only(report, check="finite_difference")
    assert result.status.value == "fail" and "is nan at element" in result.message


def test_an_unreduced_gradient_of_a_kernel_is_not_called_wrong_by_float64_differences(
    run_spec, only
):
    report = run_spec(
        spec("SiLUMulFloat32", "{shape: [3, 5], dtype: float32}, {shape: [5], dtype: float32}",
             extra="checks: [backward, finite_difference]")
    )  # fmt: skip
    warning = only(report, check="backward", status="warn")
    assert "does not match central differences" not in warning.message
    assert "`finite_difference` checks the gradient it delivers" in warning.message
    assert only(report, check="finite_difference", input_index=1).status.value == "pass"


def test_a_transformable_float32_kernel_passes_with_the_default_checks(run_spec, only):
    report = run_spec(spec("TanhFloat32Transformable", "{shape: [6], dtype: float32}"))
    assert [r for r in report.results if r.status.value in ("fail", "warn")] == []
    assert only(report, check="finite_difference").status.value == "pass"
    for check in ("jvp", "vmap", "func"):  # compared with float64 differences or draws
        skipped = only(report, check=check)
        assert skipped.applies is False and skipped.message.startswith("needs float64")
