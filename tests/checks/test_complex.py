"""Complex arguments and outputs: checked through their real and imaginary parts, as
torch.autograd.gradcheck checks them (the conjugate Wirtinger derivative)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.finite_difference import FiniteDifferenceCheck
from gradverify.checks.gradcheck import GradcheckCheck
from gradverify.checks.gradgradcheck import GradgradcheckCheck
from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.torch_gradcheck import parse_mismatch
from gradverify.inputs import build_inputs
from gradverify.spec.load import parse_spec
from gradverify.spec.models import FunctionSpec
from gradverify.target.loading import load_target
from tests.functions import complex_functions

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = "tests.functions.complex_functions"
FD = "finite_difference"


# Every check that applies to a classic autograd.Function (func, compile and opcheck are
# covered by their own tests).
ALL = "lint, forward, backward, layouts, finite_difference, gradcheck, gradgradcheck"


def spec(target: str, checks: str = ALL, shape: str = "[6]", inputs: str = "") -> str:
    listed = f"checks: [{checks}]\n" if checks else ""
    inputs = inputs or f"[{{shape: {shape}, dtype: complex128}}]"
    return f"target: {FUNCTIONS}:{target}\n{listed}cases: [{{name: c, inputs: {inputs}}}]\n"


TWO = "[{shape: [6], dtype: complex128}, {shape: [6], dtype: complex128}]"
SCALE = "[{shape: [6]}, {shape: [6], dtype: complex128, requires_grad: false}]"


def arguments_of(text: str) -> tuple[torch.Tensor, ...]:
    (entry,) = parse_spec(text, "spec.yaml")
    return tuple(build_inputs(entry.spec.cases[0], entry.spec.seed))


def not_passing(report):
    return [r for r in report.results if r.status.value not in ("pass", "skip")]


def bundled(checks: str = ALL) -> str:
    text = (ROOT / "specs" / "complex.yaml").read_text(encoding="utf-8")
    return re.sub(r"(  - target: .*\n)", rf"\1    checks: [{checks}]\n", text)


def test_the_bundled_correct_complex_functions_pass_every_check(run_spec, find):
    report = run_spec(bundled())
    for name in ("ComplexMul", "ComplexAbs"):
        results = find(report, target=f"gradverify.examples.complex:{name}")
        assert not [r for r in results if r.status.value not in ("pass", "skip")], name
        ran = {r.check for r in results if r.status.value == "pass"}
        assert {"forward", "backward", "layouts", FD, "gradcheck", "gradgradcheck"} <= ran


def test_the_bundled_conjugation_bug_is_named_at_z(run_spec, find):
    report = run_spec(bundled(FD))
    target = "gradverify.examples.complex:ComplexMulForgotConj"
    by_argument = {r.input_index: r for r in find(report, target=target, check=FD)}
    assert by_argument[0].status.value == "fail"
    assert by_argument[0].input_name == "z"
    assert "conjugate missing" in by_argument[0].hint
    assert by_argument[1].status.value == "pass"


@pytest.mark.parametrize("target", ["Abs", "Real", "Conj"])
def test_correct_non_holomorphic_functions_pass(run_spec, target):
    report = run_spec(spec(target))
    assert not not_passing(report), not_passing(report)
    fd = [r for r in report.results if r.check == FD]
    assert [r.status.value for r in fd] == ["pass"]


def test_a_complex_output_of_a_real_argument_passes_when_right(run_spec):
    report = run_spec(spec("ScaleToComplex", inputs=SCALE))
    assert not not_passing(report), not_passing(report)


def test_the_conjugation_bug_fails_at_the_element_naming_the_part(run_spec, only):
    text = spec("MulForgotConj", checks=FD, inputs=TWO)
    report = run_spec(text)
    z_result = only(report, check=FD, input_index=0)
    assert z_result.status.value == "fail"
    assert z_result.input_name == "z"
    _, w = arguments_of(text)
    (element,) = z_result.element
    # The derivatives across parts have the opposite sign: analytical = -numerical there.
    assert z_result.analytical == pytest.approx(-z_result.numerical, rel=1e-6)
    assert abs(z_result.numerical) == pytest.approx(abs(float(w[element].detach().imag)), rel=1e-6)
    assert "the imaginary part of the gradient for grad_output 1" in z_result.message
    assert "with respect to the imaginary part of z" in z_result.message
    assert "conjugate missing" in z_result.hint
    assert only(report, check=FD, input_index=1).status.value == "pass"
    assert (z_result.mismatched, z_result.total) == (12, 144)  # 2 of 4 parts per element


def test_torchs_complaint_for_complex_is_mapped_to_z_with_different_values(run_spec, only):
    """Issue 10: this was reported as argument 1 (w), with equal values."""
    report = run_spec(spec("MulForgotConj", checks="gradcheck", inputs=TWO))
    result = only(report, check="gradcheck")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "z")
    assert result.element is not None and len(result.element) == 1
    assert abs(result.analytical - result.numerical) > 0.1
    assert "part of" in result.message


def test_torchs_complex_message_is_parsed_with_its_part():
    z = torch.randn(3, dtype=torch.complex128, requires_grad=True)
    w = torch.randn(3, dtype=torch.complex128, requires_grad=True)
    with pytest.raises(GradcheckError) as raised:
        torch.autograd.gradcheck(complex_functions.MulForgotConj.apply, (z, w))
    mismatch = parse_mismatch(str(raised.value))
    assert mismatch is not None
    assert (mismatch.output, mismatch.input, mismatch.part) == (0, 0, "imaginary")
    plain = parse_mismatch("Jacobian mismatch for output 1 with respect to input 2,\n")
    assert plain is not None and (plain.output, plain.input, plain.part) == (1, 2, None)


def test_a_conjugated_real_output_gradient_gets_the_conjugation_hint(run_spec, only):
    result = only(run_spec(spec("AbsConjugated", checks=FD)), check=FD)
    assert result.status.value == "fail"
    assert "the imaginary part of the gradient" in result.message
    assert "conjugate missing" in result.hint
    assert "imaginary part of the gradient of z has the opposite sign" in result.hint


def test_a_real_argument_with_a_conjugation_bug_in_a_complex_output(run_spec, only):
    result = only(run_spec(spec("ScaleToComplexForgotConj", checks=FD, inputs=SCALE)), check=FD)
    assert result.status.value == "fail"
    assert result.input_name == "x"
    assert "imaginary part of the output (grad_output 1j)" in result.message
    assert "conjugate missing" in result.hint


@pytest.mark.parametrize(
    ("target", "inputs", "expected"),
    [
        ("AbsHalved", "", "constant factor 1/2"),
        ("MulNegated", TWO, "opposite sign everywhere"),
        ("ConjPassedThrough", "", None),
        ("RealAsImaginary", "", None),
    ],
)
def test_other_complex_bugs_get_no_conjugation_hint(run_spec, find, target, inputs, expected):
    report = run_spec(spec(target, checks=FD, inputs=inputs))
    failed = [r for r in find(report, check=FD) if r.status.value == "fail"]
    assert [r.input_index for r in failed] == [0]
    hint = failed[0].hint or ""
    assert "conjugate" not in hint
    if expected is not None:
        assert expected in hint


def test_the_real_part_bug_names_the_real_part(run_spec, only):
    result = only(run_spec(spec("RealAsImaginary", checks=FD)), check=FD)
    assert "the real part of the gradient" in result.message
    assert (result.analytical, result.numerical) == (pytest.approx(0.0), pytest.approx(1.0))


def test_a_wrong_second_derivative_names_its_parts(run_spec, only):
    report = run_spec(spec("MulDetached", checks="gradgradcheck", inputs=TWO))
    result = only(report, check="gradgradcheck")
    assert result.status.value == "fail"
    assert result.input_index == 1  # d(gradient of z) / d(w) is silently 0
    assert "d(the gradient of argument 0 (z)" in result.message
    assert "part of w" in result.message
    assert result.analytical == pytest.approx(0.0)
    assert abs(result.numerical) > 0.01


def context_for(target: str, arguments: tuple[torch.Tensor, ...]) -> CaseContext:
    name = f"{FUNCTIONS}:{target}"
    spec_model = FunctionSpec.model_validate({"target": name, "cases": [{"name": "c"}]})
    return CaseContext(load_target(name), "c", arguments, spec_model, 0)


def test_abs_next_to_zero_is_a_kink_not_a_failure():
    # Within eps of 0 |z| is a cone: central differences mean nothing there.
    values = [2e-7 + 0j, 0.5 + 0.25j, -3e-7j, 0j, 0.3 - 0.7j]
    z = torch.tensor(values, dtype=torch.complex128, requires_grad=True)
    context = context_for("Abs", (z,))
    (result,) = FiniteDifferenceCheck().run(context)
    assert result.status.value == "warn", result.message
    assert result.element in ((0,), (2,))
    assert "along its" in result.message
    (gradcheck,) = GradcheckCheck().run(context)
    assert gradcheck.status.value == "warn", gradcheck.message


def test_the_steep_gradient_of_abs_next_to_zero_is_no_second_order_failure():
    # Next to 0 the gradient z / |z| turns within eps, with a curvature of 1 / |z| that
    # central differences cannot resolve: a transition sharper than eps, not a bug.
    values = [2e-7 + 0j, 0.5 + 0.25j, -3e-7j, 0.3 - 0.7j]
    z = torch.tensor(values, dtype=torch.complex128, requires_grad=True)
    (result,) = GradgradcheckCheck().run(context_for("Abs", (z,)))
    assert result.status.value == "warn", result.message
    assert "held fixed" in result.notes[-1]


def test_a_wrong_second_derivative_next_to_zero_still_fails():
    z = torch.tensor([2e-7 + 0j, 0.5 + 0.25j], dtype=torch.complex128, requires_grad=True)
    w = torch.tensor([0.3 - 0.2j, 1.0 + 0.5j], dtype=torch.complex128, requires_grad=True)
    (result,) = GradgradcheckCheck().run(context_for("MulDetached", (z, w)))
    assert result.status.value == "fail"


def test_no_casting_warning_leaks(run_spec):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        run_spec(spec("MulForgotConj", inputs=TWO))
        run_spec(spec("ScaleToComplexForgotConj", inputs=SCALE))
        run_spec(spec("AbsConjugated"))


LARGE = "[{shape: [3000], dtype: complex128}, {shape: [3000], dtype: complex128}]"


def test_a_large_complex_input_is_randomized_and_the_bug_localized(run_spec, only):
    report = run_spec(spec("MulForgotConj", checks=f"{FD}, gradcheck", inputs=LARGE))
    result = only(report, check=FD, input_index=0)
    assert result.status.value == "fail"
    assert any(note.startswith("mode: randomized") for note in result.notes)
    assert result.input_name == "z"
    assert "part of" in result.message
    assert abs(result.analytical + result.numerical) < 1e-6  # a sign across parts
    assert "conjugate missing" in result.hint
    assert result.details and all("part of z" in detail for detail in result.details)
    assert only(report, check=FD, input_index=1).status.value == "pass"
    assert only(report, check="gradcheck", input_index=0).status.value == "fail"


def test_a_large_correct_complex_input_passes_in_randomized_mode(run_spec):
    text = spec("Abs", checks=f"{FD}, gradcheck, gradgradcheck", shape="[4000]")
    report = run_spec(text)
    assert [r.status.value for r in report.results] == ["pass"] * 3
    assert any("randomized" in note for r in report.results for note in r.notes)


def test_a_real_gradient_for_a_complex_argument_is_named(run_spec, only):
    report = run_spec(spec("AbsRealGradient", checks=f"backward, {FD}"))
    backward = only(report, check="backward")
    assert backward.status.value == "fail"
    assert "loses its imaginary part" in backward.hint
    result = only(report, check=FD)
    assert result.status.value == "fail"
    assert "the imaginary part of the gradient" in result.message
    assert "has no imaginary part" in result.hint
    assert "conjugate" not in result.hint
