"""The `reference` check: outputs and gradients against a plain-PyTorch reference."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from gradverify.checks.reference import declared_dtype
from gradverify.examples.fused import FusedBiasGelu, bias_gelu_reference, gelu_tanh
from gradverify.inputs import build_inputs
from gradverify.spec.load import load_spec_file
from tests.functions.references import BiasGeluWrongCubic, bias_gelu

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "specs" / "checks" / "reference.yaml"
BUNDLED_SPEC = ROOT / "specs" / "reference.yaml"
FUNCTIONS = "tests.functions.references"
CHECK = "reference"
# "Function's error 3.1e-3, reference's own float16 error 2.0e-3, allowed 4.0e-3 = 2 × 2.0e-3 + floor 1.9e-3"
NUMBER = r"([0-9.]+(?:e-?[0-9]+)?)"
BUDGET = re.compile(
    rf"Function's error {NUMBER}, reference's own (\w+) error {NUMBER}, "
    rf"allowed {NUMBER} = ([0-9.]+) × {NUMBER} \+ floor {NUMBER}"
)


@pytest.fixture(scope="module")
def report(run_spec):
    return run_spec(SPEC)


def results_of(report, find, target, case):
    return find(report, target=f"{FUNCTIONS}:{target}", case=case, check=CHECK)


def budget_of(text):
    """(Function's error, dtype, reference's error, allowed, k, floor) from a budget line."""
    match = BUDGET.search(text)
    assert match, text
    error, dtype, reference_error, allowed, k, reference_again, floor = match.groups()
    assert reference_again == reference_error
    return float(error), dtype, float(reference_error), float(allowed), float(k), float(floor)


def arguments_of(target, case):
    (entry,) = [e for e in load_spec_file(SPEC) if e.spec.target == f"{FUNCTIONS}:{target}"]
    (chosen,) = [c for c in entry.spec.cases if c.name == case]
    return [a.detach() for a in build_inputs(chosen, entry.spec.seed)]


def test_the_bundled_half_precision_example_passes(run_spec, find):
    x = torch.ones(2, 8, dtype=torch.float64)
    with pytest.raises(TypeError, match="float16 or bfloat16 only"):
        FusedBiasGelu.apply(x, torch.zeros(8, dtype=torch.float64))  # so it never ran in float64
    report = run_spec(BUNDLED_SPEC)
    assert {(r.check, r.status.value) for r in report.results} == {
        ("forward", "pass"),
        ("backward", "pass"),
        ("reference", "pass"),
    }
    for result in find(report, check=CHECK):
        dtype = "bfloat16" if result.case == "bfloat16" else "float16"
        assert f"in {dtype}" in result.message
        assert "1 output(s), 2 gradient(s)" in result.message
        budgets = [budget_of(note) for note in result.notes if "allowed" in note]
        assert len(budgets) == 3  # output 0 and the gradients of x and bias
        for error, named, reference_error, allowed, k, floor in budgets:
            assert named == dtype
            assert k == 2.0
            assert error <= allowed == pytest.approx(k * reference_error + floor, rel=0.1)


def test_correct_float64_function_passes(report, find):
    (result,) = results_of(report, find, "BiasGelu", "float64")
    assert result.status.value == "pass"
    assert "1 output(s), 2 gradient(s)" in result.message
    assert "atol 1e-05 + rtol 0.001" in result.message
    assert result.total == 48 + 48 + 8
    assert result.max_abs_error < 1e-12


def test_forward_that_differs_names_the_output_and_element(report, find):
    (result,) = results_of(report, find, "BiasGeluWrongCubic", "float64")  # gradients agree
    x, bias = arguments_of("BiasGeluWrongCubic", "float64")
    ours, theirs = BiasGeluWrongCubic.apply(x, bias), bias_gelu(x, bias)
    worst = divmod(int((ours - theirs).abs().argmax()), 8)
    assert result.status.value == "fail"
    assert (result.output_index, result.input_index) == (0, None)
    assert result.element == worst
    assert result.analytical == pytest.approx(float(ours[worst]), rel=1e-12)
    assert result.numerical == pytest.approx(float(theirs[worst]), rel=1e-12)
    assert result.max_abs_error == pytest.approx(float((ours - theirs).abs().max()))
    assert f"output 0 differs from the reference at element {list(worst)}" in result.message
    assert "wrong formula or constant in forward" in result.hint


def test_gradient_mismatch_names_the_argument(report, find):
    (result,) = results_of(report, find, "BiasGeluMeanBias", "float64")  # x and output agree
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name, result.output_index) == (1, "bias", None)
    assert len(result.element) == 1
    assert result.analytical == pytest.approx(result.numerical / 6)  # a mean over 6 rows
    assert (result.mismatched, result.total) == (8, 8)
    assert "gradient of argument 1 (bias) differs from the reference" in result.message
    assert "forward agrees with the reference" in result.hint
    assert "1/6" in result.hint and "mean where a sum belongs" in result.hint


@pytest.mark.parametrize("case", ["float32", "bfloat16"])
def test_lower_dtypes_pass_with_the_k_rule(report, find, case):
    (result,) = results_of(report, find, "BiasGelu", case)
    assert result.status.value == "pass"
    assert f"in {case}, within 2 × the reference's own {case} error + 4 ulps" in result.message
    budgets = [budget_of(note) for note in result.notes if "allowed" in note]
    assert [b[1] for b in budgets] == [case] * 3
    assert all(error <= allowed for error, _, _, allowed, _, _ in budgets)
    assert any("truth is the reference on float64 copies" in note for note in result.notes)


def test_a_wrong_derivative_in_a_half_only_function_fails_the_rule(report, find):
    results = results_of(report, find, "FusedBiasGeluWrongDerivative", "float16")
    assert [(r.status.value, r.input_index, r.output_index) for r in results] == [
        ("fail", 0, None),
        ("fail", 1, None),
    ]  # the forward is right: output 0 passes
    for result in results:
        error, dtype, reference_error, allowed, k, floor = budget_of(result.message)
        assert dtype == "float16"
        assert error > 2 * allowed
        assert allowed == pytest.approx(k * reference_error + floor, rel=0.1)
        assert result.max_abs_error == pytest.approx(error, rel=0.06)
        # The worst element is where the Function is furthest from the float64 truth.
        assert abs(result.analytical - result.numerical) == pytest.approx(result.max_abs_error)
        assert "wrong term or constant in backward" in result.hint
        assert result.notes == (
            "the Function ran in float16 only; the truth is the reference on float64 copies of "
            "the same arguments",
        )


def test_float16_accumulation_fails_only_the_bias_gradient(report, find):
    (result,) = results_of(report, find, "FusedBiasGeluHalfAccumulation", "many_rows")
    assert (result.status.value, result.input_index, result.input_name) == ("fail", 1, "bias")
    error, _, reference_error, allowed, _, _ = budget_of(result.message)
    assert error > allowed > 2 * reference_error
    assert "accumulation kept in float16" in result.hint
    assert result.details[0].startswith(f"at element {list(result.element)}: Function ")


def test_a_crash_in_the_function_names_the_function(report, find):
    (result,) = results_of(report, find, "BiasGeluBackwardRaises", "float64")
    assert result.status.value == "fail"
    assert result.message.startswith("the Function's backward raised RuntimeError")
    assert "backward kernel not built" in result.message
    assert any("references.py" in line for line in result.details)


def test_a_crash_in_the_reference_names_the_reference(report, find):
    (result,) = results_of(report, find, "BiasGelu", "reference_raises")
    assert result.status.value == "fail"
    assert result.message.startswith("the reference raised ValueError")
    assert "not the Function" in result.hint
    assert any("raising_reference" in line for line in result.details)


def test_a_reference_that_cannot_be_loaded_is_a_clear_failure(report, find):
    (result,) = results_of(report, find, "BiasGelu", "missing_reference")
    assert result.status.value == "fail"
    assert "cannot load the reference" in result.message
    assert "no attribute 'no_such_reference'" in result.message
    assert "package.module:function" in result.hint


def test_a_different_number_of_outputs_is_reported(report, find):
    (result,) = results_of(report, find, "BiasGelu", "two_outputs")
    assert result.status.value == "fail"
    assert result.message == "the Function returns 1 output(s), the reference 2"


def test_a_reference_autograd_cannot_differentiate_is_blamed(report, find):
    (result,) = results_of(report, find, "BiasGelu", "detached_reference")
    assert (result.status.value, result.input_index) == ("fail", 0)
    assert result.numerical == 0.0
    assert "the reference gives no gradient for argument 0 (x)" in result.hint


def test_only_arguments_that_require_grad_are_compared(report, find):
    (result,) = results_of(report, find, "BiasGelu", "bias_without_grad")
    assert result.status.value == "pass"
    assert "1 output(s), 1 gradient(s)" in result.message


def test_a_crash_in_forward_is_said_once_when_forward_already_failed(run_spec, find):
    report = run_spec(
        """
        target: gradverify.examples.fused:FusedBiasGelu
        reference: gradverify.examples.fused:bias_gelu_reference
        checks: [forward, reference]
        cases: [{name: float64, inputs: [{shape: [2, 8]}, {shape: [8]}]}]
        """
    )
    assert [(r.check, r.status.value) for r in report.results] == [
        ("forward", "fail"),
        ("reference", "skip"),
    ]


def test_where_the_reference_overflows_too_nothing_is_judged(run_spec, only):
    report = run_spec(
        f"""
        target: torch:exp
        reference: {FUNCTIONS}:exp
        checks: [reference]
        cases: [{{name: float16, inputs: [{{values: [1.0, 12.0, 2.0], dtype: float16}}]}}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert "(1 element(s) not judged: the reference overflows there)" in result.notes[0]


def test_nan_where_the_truth_is_finite_fails(run_spec, find):
    report = run_spec(
        f"""
        target: {FUNCTIONS}:exp_nan_below_zero
        reference: {FUNCTIONS}:exp
        checks: [reference]
        cases: [{{name: float16, inputs: [{{values: [1.0, -1.0, 2.0], dtype: float16}}]}}]
        """
    )
    output, gradient = find(report, check=CHECK)
    assert (output.status.value, output.output_index, output.element) == ("fail", 0, (1,))
    assert math.isnan(output.analytical)
    assert output.numerical == pytest.approx(math.exp(-1))
    assert output.max_abs_error == math.inf
    assert "NaN or Inf where the reference is finite" in output.hint
    assert "65504" in output.hint
    assert (gradient.status.value, gradient.input_index) == ("fail", 0)
    assert gradient.hint == "the forward already differs from the reference: fix that first"


@pytest.mark.parametrize("seed", range(4))
def test_no_false_alarms_in_low_precision(run_spec, seed):
    spec = f"""
        functions:
          - target: {FUNCTIONS}:BiasGelu
            reference: {FUNCTIONS}:bias_gelu
            checks: [reference]
            cases: &cases
              - name: float32
                inputs: [{{shape: [32, 8], low: -5.0, high: 5.0, dtype: float32}}, {{shape: [8], dtype: float32}}]
              - name: float16
                inputs: [{{shape: [32, 8], low: -5.0, high: 5.0, dtype: float16}}, {{shape: [8], dtype: float16}}]
              - name: bfloat16
                inputs: [{{shape: [32, 8], low: -5.0, high: 5.0, dtype: bfloat16}}, {{shape: [8], dtype: bfloat16}}]
          - target: gradverify.examples.fused:FusedBiasGelu
            reference: gradverify.examples.fused:bias_gelu_reference
            checks: [reference]
            cases: [{{name: float16, inputs: [{{shape: [64, 8], low: -5.0, high: 5.0, dtype: float16}}, {{shape: [8], dtype: float16}}]}}]
        """
    report = run_spec(spec, seed=seed)
    assert len(report.results) == 4
    assert [(r.case, r.message) for r in report.results if r.status.value != "pass"] == []


def test_the_bundled_reference_is_the_same_function_in_float64():
    x = torch.linspace(-4, 4, 16, dtype=torch.float64).reshape(2, 8)
    bias = torch.linspace(-1, 1, 8, dtype=torch.float64)
    assert torch.allclose(bias_gelu_reference(x, bias), gelu_tanh(x + bias)[0], atol=1e-12)


@pytest.mark.parametrize(
    ("dtypes", "requires_grad", "expected"),
    [
        ((torch.float64, torch.float64), (True, True), torch.float64),
        ((torch.float16, torch.float32), (True, True), torch.float16),
        ((torch.float32, torch.bfloat16), (True, True), torch.bfloat16),
        ((torch.float64, torch.float16), (True, False), torch.float64),  # only grads count
        ((torch.float32, torch.float64), (False, False), torch.float32),  # none: all floating
        ((torch.complex64,), (True,), torch.float32),
        ((torch.complex128,), (True,), torch.float64),
        ((torch.int64,), (False,), torch.float64),
    ],
)
def test_declared_dtype(dtypes, requires_grad, expected):
    arguments = [
        torch.zeros(2, dtype=dtype).requires_grad_(grad)
        for dtype, grad in zip(dtypes, requires_grad, strict=True)
    ]
    assert declared_dtype([*arguments, 3.0, None]) == expected
