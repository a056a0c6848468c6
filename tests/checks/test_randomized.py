"""Randomized mode: random projections, group testing that names a wrong entry, and `auto`."""

from __future__ import annotations

import math
import textwrap

import pytest
import torch

from gradverify.checks.gradcheck.fast_pass import restricted_complaint
from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.modes import MAX_FULL_ENTRIES, first_order_problem
from gradverify.inputs import build_inputs
from gradverify.numerics.localization import Entry
from gradverify.report.evidence import evidence
from gradverify.spec.load import parse_spec
from gradverify.spec.models import FunctionSpec
from gradverify.target.loading import load_target
from tests.functions import large

MILLION = """
target: tests.functions.large:{target}
checks: [finite_difference]
mode: randomized
cases:
  - name: million
    inputs: [{{shape: [1000, 1000]}}]
"""

TEN_THOUSAND = """
target: tests.functions.large:{target}
checks: [finite_difference, gradcheck, gradgradcheck]
cases:
  - name: ten_thousand
    inputs: [{{shape: [100, 100]}}]
"""


def first_argument(spec_text: str) -> torch.Tensor:
    """The first argument gradverify builds for the spec's only case."""
    (entry,) = parse_spec(textwrap.dedent(spec_text), "spec.yaml")
    argument = build_inputs(entry.spec.cases[0], entry.spec.seed)[0]
    assert isinstance(argument, torch.Tensor)
    return argument.detach()


def sigmoid_slope(x: float) -> float:
    s = 1 / (1 + math.exp(-x))
    return s * (1 - s)


@pytest.fixture(scope="module")
def million_wrong(run_spec):
    """The one-wrong-element Sigmoid on 10⁶ elements, and the forward calls it took."""
    large.reset_forward_calls()
    report = run_spec(MILLION.format(target="SigmoidWrongAtOneElement"))
    return report, large.FORWARD_CALLS["count"]


def test_localization_names_the_one_wrong_element_of_a_million(million_wrong, only):
    report, _ = million_wrong
    result = only(report, check="finite_difference")
    element = divmod(large.WRONG_INDEX, 1000)
    assert element == (123, 457)
    assert result.status.value == "fail"
    assert (result.input_index, result.output_index, result.element) == (0, 0, element)
    x = first_argument(MILLION.format(target="SigmoidWrongAtOneElement"))
    slope = sigmoid_slope(float(x[element]))
    assert result.numerical == pytest.approx(slope, rel=1e-6)
    assert result.analytical == pytest.approx(2 * slope, rel=1e-9)
    assert "element [123, 457]" in result.message
    assert "localized by group testing" in result.message
    assert "2 × numerical" in result.hint
    assert "mode: randomized (requested)" in result.notes


def test_localization_takes_a_logarithmic_number_of_forward_calls(million_wrong):
    _, calls = million_wrong
    # Bisection: 2·log2(10⁶) ≈ 40 calls; then the projections (2 each), the column of the
    # element found (2) and its kink probe (5). A full Jacobian would take 2,000,000.
    assert 2 * math.log2(10**6) <= calls < 100


def test_a_correct_million_element_function_passes(run_spec, only):
    result = only(run_spec(MILLION.format(target="Sigmoid")), check="finite_difference")
    assert result.status.value == "pass"
    assert "3 random projections" in result.message
    assert result.element is None


def test_auto_mode_uses_randomized_for_ten_thousand_elements_and_says_so(run_spec):
    report = run_spec(TEN_THOUSAND.format(target="Sigmoid"))
    assert [r.check for r in report.results] == ["finite_difference", "gradcheck", "gradgradcheck"]
    for result in report.results:
        assert result.status.value == "pass"
        assert "mode: randomized (the Jacobian would have 1.0e+08 entries)" in result.notes
    assert report.results[1].message == "torch.autograd.gradcheck passed (fast_mode)"


def test_auto_mode_localizes_the_wrong_element_of_ten_thousand(run_spec, only):
    report = run_spec(TEN_THOUSAND.format(target="SigmoidWrongAtOneElement"))
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.element == divmod(large.WRONG_INDEX % 10_000, 100)


def test_a_wrong_entry_off_the_diagonal_names_its_output_element(run_spec, only):
    report = run_spec(TEN_THOUSAND.format(target="ScaleLeakingGradient"))
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.element == divmod(large.LEAK_TO, 100)
    assert f"output 0 element {list(divmod(large.LEAK_FROM, 100))}" in result.message
    assert (result.analytical, result.numerical) == (1.0, 0.0)


def test_randomized_reports_repeat_run_to_run(run_spec):
    spec = TEN_THOUSAND.format(target="SigmoidWrongAtOneElement")
    first, second = run_spec(spec), run_spec(spec)
    assert [(r.status, r.message, r.element) for r in first.results] == [
        (r.status, r.message, r.element) for r in second.results
    ]


def test_small_specs_stay_full_in_auto_mode(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [finite_difference, gradcheck]
        cases: [{name: vector, inputs: [{shape: [4]}]}]
        """
    )
    assert only(report, check="finite_difference").message.endswith("matches (16 entries)")
    assert only(report, check="gradcheck").message == "torch.autograd.gradcheck passed"
    assert not any(note.startswith("mode:") for r in report.results for note in r.notes)


@pytest.mark.parametrize(("size", "mode"), [(316, "full"), (317, "randomized")])
def test_auto_switches_at_the_entry_threshold(run_spec, only, size, mode):
    assert (size * size <= MAX_FULL_ENTRIES) == (mode == "full")
    report = run_spec(
        f"""
        target: tests.functions.large:Sigmoid
        checks: [finite_difference]
        cases: [{{name: vector, inputs: [{{shape: [{size}]}}]}}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "pass"
    randomized = any(note.startswith("mode: randomized") for note in result.notes)
    assert randomized == (mode == "randomized")


def test_a_scalar_output_of_many_elements_is_randomized_for_its_call_count(run_spec, find):
    report = run_spec(
        """
        target: tests.functions.large:ScaledSum
        checks: [finite_difference]
        cases: [{name: dot, inputs: [{shape: [3000]}, {shape: [3000]}]}]
        """
    )
    results = find(report, check="finite_difference")
    assert [(r.input_index, r.status.value) for r in results] == [(0, "pass"), (1, "pass")]
    assert all("forward and backward calls" in r.notes[-1] for r in results)


def clipped_relu_at_kinks(size: int) -> str:
    values = [round(-1.5 + 3.0 * i / (size - 1), 6) for i in range(size)]
    values[size // 4], values[3 * size // 4] = 0.0, 1.0  # both kinks of ClippedReLU(clip 1)
    return f"""
        target: gradverify.examples.activations:ClippedReLU
        checks: [finite_difference, gradcheck, gradgradcheck]
        mode: randomized
        cases:
          - name: at_kinks
            inputs: [{{values: {values}}}, 1.0]
        """


def test_kinks_in_a_larger_input_warn_not_fail(run_spec, only):
    report = run_spec(clipped_relu_at_kinks(4096))
    result = only(report, check="finite_difference")
    assert result.status.value == "warn"
    assert result.element in {(1024,), (3072,)}
    assert "lies between them" in result.message
    assert "1 more element" in result.message
    assert only(report, check="gradcheck").status.value == "pass"  # torch's fast mode
    assert only(report, check="gradgradcheck").status.value == "warn"


@pytest.mark.parametrize("check", ["finite_difference", "gradcheck", "gradgradcheck"])
def test_kinks_warn_in_every_check_in_randomized_mode(run_spec, only, check):
    result = only(run_spec(clipped_relu_at_kinks(5)), check=check)
    assert result.status.value == "warn"
    assert "non-differentiable" in result.message


def test_a_value_outside_the_one_sided_slopes_still_fails(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:ReLUWrongAtZero
        checks: [finite_difference, gradcheck]
        mode: randomized
        cases: [{name: at_zero, inputs: [{values: [-1.0, 0.0, 1.0]}]}]
        """
    )
    for check in ("finite_difference", "gradcheck"):
        result = only(report, check=check)
        assert result.status.value == "fail"
        assert (result.element, result.analytical) == ((1,), 2.0)
        assert "only at non-differentiable points" in result.hint


def test_several_wrong_elements_name_one_of_them(run_spec, only):
    spec = """
        target: gradverify.examples.buggy:ClippedReLUForgotMask
        checks: [finite_difference]
        cases: [{name: matrix, inputs: [{shape: [64, 64], low: -3.0, high: 3.0}, 1.0]}]
        """
    report = run_spec(spec)
    result = only(report, check="finite_difference")
    x = first_argument(spec)
    assert result.status.value == "fail"
    assert float(x[result.element]) > 1.0  # backward forgot the mask above the clip value
    assert (result.analytical, result.numerical) == (1.0, 0.0)
    assert result.mismatched >= 1


def test_gradcheck_localizes_a_failure_of_torchs_fast_mode(run_spec, only):
    spec = """
        target: tests.functions.value_bugs:FlippedSign
        checks: [gradcheck]
        cases: [{name: vector, inputs: [{shape: [2000]}]}]
        """
    result = only(run_spec(spec), check="gradcheck")
    x = first_argument(spec)
    (index,) = result.element
    assert result.status.value == "fail"
    assert result.numerical == pytest.approx(2 * float(x[index]), rel=1e-6)
    assert result.analytical == pytest.approx(-2 * float(x[index]), rel=1e-9)
    assert "localized by group testing" in result.message


def test_gradgradcheck_finds_a_silently_wrong_second_derivative(run_spec, only):
    result = only(
        run_spec(
            """
            target: tests.functions.second_order:DetachedBackwardSquare
            checks: [gradgradcheck]
            cases: [{name: vector, inputs: [{shape: [2000]}]}]
            """
        ),
        check="gradgradcheck",
    )
    assert result.status.value == "fail"
    (index,) = result.element
    assert f"d(the gradient of argument 0 (x) [{index}]) / d(argument 0 (x))" in result.message
    assert result.analytical == 0.0
    assert abs(result.numerical) > 1e-3  # 2 * grad_output there


def test_an_approximate_gradient_is_measured_on_projections(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:SlightlyOffSquare
        gradient: approximate
        checks: [finite_difference]
        cases: [{name: vector, inputs: [{shape: [2000]}]}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "pass"
    assert "projected error" in result.message
    assert result.max_rel_error == pytest.approx(5e-4, rel=0.2)  # backward is 0.05% off


@pytest.fixture(scope="module")
def ten_thousand_wrong(run_spec):
    return run_spec(TEN_THOUSAND.format(target="SigmoidWrongAtOneElement"))


def test_gradcheck_does_not_pass_what_finite_difference_localized(ten_thousand_wrong, only):
    localized = only(ten_thousand_wrong, check="finite_difference")
    result = only(ten_thousand_wrong, check="gradcheck")
    assert result.status.value == "fail"  # torch's fast mode alone passes this case
    assert result.same_as == "finite_difference"
    assert result.element == localized.element
    assert result.message.startswith(
        "missed by torch's fast mode, confirmed by its gradcheck on the 1 localized entry: "
    )
    assert any("few random projections" in note for note in result.notes)


def test_gradcheck_alone_finds_what_its_fast_mode_missed(run_spec, only):
    report = run_spec(
        TEN_THOUSAND.format(target="SigmoidWrongAtOneElement").replace(
            "[finite_difference, gradcheck, gradgradcheck]", "[gradcheck]"
        )
    )
    result = only(report, check="gradcheck")
    assert result.status.value == "fail"
    assert result.same_as is None  # its own finding: no earlier check made it
    assert result.element == divmod(large.WRONG_INDEX % 10_000, 100)


def test_torchs_gradcheck_on_localized_entries_passes_a_correct_function():
    x = torch.linspace(-2, 2, 100, dtype=torch.float64).reshape(10, 10).requires_grad_()
    index = large.WRONG_INDEX % 100
    entries = [Entry(0, index, index, 0.0, 0.0, True), Entry(0, 3, 3, 0.0, 0.0, True)]
    complaints = {}
    for name in ("Sigmoid", "SigmoidWrongAtOneElement"):
        target = f"tests.functions.large:{name}"
        spec = FunctionSpec.model_validate({"target": target, "cases": [{"name": "c"}]})
        context = CaseContext(load_target(target), "c", (x,), spec, 0)
        problem = first_order_problem(context, (x,), [0])
        assert problem is not None
        complaints[name] = restricted_complaint(context, problem, entries)
    assert complaints["Sigmoid"] is None
    assert "Jacobian mismatch" in (complaints["SigmoidWrongAtOneElement"] or "")


def test_counts_from_localization_say_at_least(ten_thousand_wrong, only):
    for check in ("finite_difference", "gradcheck", "gradgradcheck"):
        result = only(ten_thousand_wrong, check=check)
        assert result.mismatched_at_least
        assert "(at least 1 wrong entry, localized by group testing" in result.message
        assert dict(evidence(result))["error"].endswith("; at least 1 entry off")
