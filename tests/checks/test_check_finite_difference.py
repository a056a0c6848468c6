"""The `finite_difference` check: each argument's Jacobian against central differences."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from gradverify.inputs import build_inputs
from gradverify.spec.load import load_spec_file

ROOT = Path(__file__).resolve().parents[2]
BUGS_SPEC = ROOT / "tests" / "specs" / "bugs.yaml"
VALUE_BUGS = "tests.functions.value_bugs"
CHECK = "finite_difference"


def arguments_of(target):
    """The arguments gradverify built for the one case of `target` in bugs.yaml."""
    (entry,) = [e for e in load_spec_file(BUGS_SPEC) if e.spec.target == target]
    arguments = build_inputs(entry.spec.cases[0], entry.spec.seed)
    return [a.detach() if isinstance(a, torch.Tensor) else a for a in arguments]


def per_argument(report, find, target):
    return {r.input_index: r for r in find(report, target=target, check=CHECK)}


def test_flipped_sign_reports_the_worst_element_and_its_values(bugs_report, only):
    target = f"{VALUE_BUGS}:FlippedSign"
    result = only(bugs_report, target=target, check=CHECK)
    (x,) = arguments_of(target)
    worst = int(x.abs().argmax())  # the error is 4|x| on the diagonal
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name, result.output_index) == (0, "x", 0)
    assert result.element == (worst,)
    assert result.numerical == pytest.approx(2 * float(x[worst]), rel=1e-6)
    assert result.analytical == pytest.approx(-2 * float(x[worst]), rel=1e-9)
    assert (result.mismatched, result.total) == (5, 25)
    assert "opposite sign" in result.hint
    assert f"element [{worst}]" in result.message


def test_wrong_transpose_blames_argument_0_only(bugs_report, find):
    results = per_argument(bugs_report, find, f"{VALUE_BUGS}:WrongTransposeMatMul")
    assert results[0].status.value == "fail"
    assert results[0].input_name == "a"
    assert "transpose" in results[0].hint
    assert results[1].status.value == "pass"


def test_missing_one_over_n_hints_the_size_of_the_last_dim(bugs_report, only):
    result = only(bugs_report, target=f"{VALUE_BUGS}:MissingOneOverN", check=CHECK)
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert len(result.element) == 2
    assert result.analytical == pytest.approx(1.0)
    assert result.numerical == pytest.approx(0.25, rel=1e-6)
    assert (result.mismatched, result.total) == (12, 36)  # the 12 nonzero entries of J[3, 12]
    assert "factor 4" in result.hint
    assert "division by 4" in result.hint
    # The output row that shows the error is the row the element belongs to.
    assert f"output 0 element [{result.element[0]}]" in result.message


def test_wrong_broadcast_reduction_blames_the_bias(bugs_report, find):
    results = per_argument(bugs_report, find, f"{VALUE_BUGS}:WrongBroadcastReduction")
    assert results[0].status.value == "pass"
    bias = results[1]
    assert bias.status.value == "fail"
    assert bias.input_name == "bias"
    assert len(bias.element) == 1
    assert bias.analytical == pytest.approx(0.25)
    assert bias.numerical == pytest.approx(1.0, rel=1e-6)
    assert "1/4" in bias.hint


def test_bug_only_in_second_argument_passes_the_first(bugs_report, find):
    target = f"{VALUE_BUGS}:BugOnlyInSecondArgument"
    results = per_argument(bugs_report, find, target)
    assert sorted(results) == [0, 1]
    assert results[0].status.value == "pass"
    assert results[0].input_name == "a"
    second = results[1]
    assert second.status.value == "fail"
    assert second.input_name == "b"
    assert "argument 1 (b)" in second.message
    assert second.analytical == pytest.approx(2 * second.numerical, rel=1e-6)
    assert "factor 2" in second.hint
    a, _ = arguments_of(target)
    assert second.numerical == pytest.approx(float(a[second.element]), rel=1e-6)


def test_zero_gradient_says_nothing_comes_back(bugs_report, only):
    result = only(bugs_report, target=f"{VALUE_BUGS}:ZeroGradient", check=CHECK)
    assert result.status.value == "fail"
    assert result.analytical == 0.0
    assert result.numerical != 0.0
    assert "returns zero for x everywhere" in result.hint


def test_nan_gradient_is_off_at_its_element(bugs_report, only):
    result = only(bugs_report, target="tests.functions.structural_bugs:NaNGradient", check=CHECK)
    assert result.status.value == "fail"
    assert result.element == (2,)
    assert math.isnan(result.analytical)


def test_tolerances_come_from_the_spec(run_spec, find):
    text = """
        target: tests.functions.value_bugs:BugOnlyInSecondArgument
        checks: [finite_difference]
        tolerance: {rtol: RTOL}
        cases: [{name: pair, inputs: [{shape: [4]}, {shape: [4]}]}]
        """
    strict = run_spec(text.replace("RTOL", "0.001"))
    loose = run_spec(text.replace("RTOL", "2.0"))  # |2n - n| <= 2|n|
    assert [r.status.value for r in strict.results] == ["pass", "fail"]
    assert [r.status.value for r in loose.results] == ["pass", "pass"]


def test_lower_precision_arguments_are_checked_in_float64_with_a_note(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [finite_difference]
        cases: [{name: half, inputs: [{shape: [4], dtype: float32}]}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert result.notes == ("argument 0 (x) promoted from float32 to float64 for this check",)


def test_complex_arguments_are_checked_through_their_parts(run_spec, only):
    # Square's backward, 2 * x, lacks the conjugate complex x needs (2 * x.conj()):
    # tests/checks/test_complex.py has the complex cases in full.
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [finite_difference]
        cases: [{name: complex, inputs: [{shape: [3], dtype: complex128}]}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert "conjugate missing" in result.hint


def test_non_differentiable_outputs_are_not_compared(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.correct:ArgmaxWithIndex
        checks: [finite_difference]
        cases: [{name: rows, inputs: [{shape: [2, 3]}]}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert result.total == 2 * 6  # the rows of the values output only, not of the indices
