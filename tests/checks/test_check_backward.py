"""The `backward` check: what backward returns is well-formed, finite, deterministic and pure."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.report.evidence import evidence

ROOT = Path(__file__).resolve().parents[2]
CRASH_SPEC = ROOT / "tests" / "specs" / "checks" / "crash.yaml"

STRUCTURAL = "tests.functions.structural_bugs"


def backward_result(report, only, name):
    return only(report, target=f"{STRUCTURAL}:{name}", check="backward")


def test_too_few_gradients_names_the_count(bugs_report, only):
    result = backward_result(bugs_report, only, "TooFewGradients")
    assert result.status.value == "fail"
    assert "backward returned 1 value(s)" in result.message
    assert "forward takes 2 argument(s) (x, alpha)" in result.message
    assert "one gradient per forward argument" in result.hint


def test_wrong_gradient_shape_names_both_shapes(bugs_report, only):
    result = backward_result(bugs_report, only, "WrongGradShape")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert "shape [6]" in result.message
    assert "shape [2, 3]" in result.message
    assert "reshape" in result.hint


def test_a_gradient_of_the_transposed_shape_is_called_transposed_not_reshaped(run_spec, only):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:LinearTransposedWeightGrad
        cases:
          - name: linear
            inputs: [{{shape: [2, 4]}}, {{shape: [3, 4]}}]
        """
    )
    result = only(report, check="backward")

    assert (result.status.value, result.input_name) == ("fail", "weight")
    assert "shape [4, 3], but the argument has shape [3, 4]" in result.message
    assert "transposed gradient" in result.hint
    assert "reshape the gradient" not in result.hint


HINTS = "tests.functions.hints"


def shape_failure(run_spec, only, name, inputs):
    report = run_spec(
        f"""
        target: {HINTS}:{name}
        checks: [backward]
        cases: [{{name: case, inputs: {inputs}}}]
        """
    )
    result = only(report, check="backward")
    assert result.status.value == "fail"
    return result


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("SumForgotExpand", "`grad.expand_as(x)`"),  # [] for [3, 4]
        ("RowSumForgotExpand", "`grad.expand_as(x)`"),  # [4] for [3, 4]
        ("ColumnSumForgotExpand", "`grad.unsqueeze(1).expand_as(x)`"),  # [3] for [3, 4]
    ],
)
def test_a_gradient_with_fewer_elements_is_told_to_expand(run_spec, only, name, fix):
    result = shape_failure(run_spec, only, name, "[{shape: [3, 4]}]")
    assert result.input_name == "x"
    assert fix in result.hint
    assert "sum" not in result.hint.split(";")[0]  # the advice is to expand, not to sum
    assert "summed back" not in result.hint


def test_a_broadcast_argument_is_told_to_sum_back_in_a_warning(run_spec, only):
    # Autograd sums the [3, 4] gradient back to [4]: what it delivers is right, so no failure.
    report = run_spec(
        f"""
        target: {HINTS}:BiasAddForgotSum
        checks: [backward]
        cases: [{{name: case, inputs: [{{shape: [3, 4]}}, {{shape: [4]}}]}}]
        """
    )
    result = only(report, check="backward")
    assert result.status.value == "warn"
    assert result.input_name == "b"
    assert "autograd sums it to [4]" in result.message
    assert "`grad.sum_to_size(b.shape)`" in result.hint
    assert "expand" not in result.hint


def test_wrong_gradient_dtype_fails_backward_although_autograd_hides_it(bugs_report, only):
    result = backward_result(bugs_report, only, "WrongGradDtype")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert "float32" in result.message
    assert "float64" in result.message
    assert "silently casts" in result.hint
    # Through autograd the gradient is cast back, and the first-order values agree.
    target = f"{STRUCTURAL}:WrongGradDtype"
    assert only(bugs_report, target=target, check="finite_difference").status.value == "pass"
    assert only(bugs_report, target=target, check="gradcheck").status.value == "pass"


def test_a_complex_gradient_of_a_real_input_is_told_to_take_the_real_part(run_spec, only):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:FourierKeepsComplexGradient
        checks: [backward]
        cases: [{{name: vector, inputs: [{{shape: [8]}}]}}]
        """
    )
    result = only(report, check="backward")

    assert result.status.value == "fail"
    assert "is complex128, but the argument is float64" in result.message
    assert "`grad.real`" in result.hint and "silently casts" not in result.hint


def test_a_backward_that_fails_leaves_layouts_not_run_rather_than_blaming_a_branch(run_spec, only):
    # backward writes the saved output in place: layouts would see the output change
    # between its runs and blame a branch on needs_input_grad
    report = run_spec(
        f"""
        target: {STRUCTURAL}:SigmoidScalesSavedOutputInPlace
        checks: [backward, layouts]
        cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )

    assert only(report, check="backward").status.value == "fail"
    layouts = only(report, check="layouts")
    assert (layouts.status.value, layouts.same_as) == ("skip", "backward")


@pytest.mark.parametrize("name", ["SquareSquaresGradOutput", "ReLUAbsGradOutput"])
def test_a_backward_not_linear_in_grad_output_fails(run_spec, only, name):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:{name}
        checks: [backward]
        cases: [{{name: vector, inputs: [{{shape: [6]}}]}}]
        """
    )
    result = only(report, check="backward")

    assert (result.status.value, result.input_name) == ("fail", "x")
    assert "not linear in grad_output" in result.message
    assert "`gradient: surrogate`" in result.hint


def test_a_clipping_surrogate_declared_as_such_is_not_asked_to_be_linear(run_spec, only):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:ReLUAbsGradOutput
        gradient: surrogate
        checks: [backward]
        cases: [{{name: vector, inputs: [{{shape: [6]}}]}}]
        """
    )
    assert only(report, check="backward").status.value == "pass"


def test_nan_gradient_names_the_element(bugs_report, only):
    result = backward_result(bugs_report, only, "NaNGradient")
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert result.element == (2,)
    assert "nan" in result.message
    assert "[2]" in result.message


def test_modifying_grad_output_in_place_fails(bugs_report, only):
    result = backward_result(bugs_report, only, "InplaceGradOutput")
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.input_index is None
    assert "grad_output 0 in place" in result.message


def test_nondeterministic_backward_fails_with_both_values(bugs_report, only):
    result = backward_result(bugs_report, only, "NondeterministicBackward")
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert "nondeterministic" in result.message
    assert 0 < result.max_abs_error <= 1e-3  # the Function's noise is below 1e-3
    assert result.analytical != result.numerical
    assert abs(result.analytical - result.numerical) == pytest.approx(result.max_abs_error)
    assert "nondet_tol" in result.hint


def test_the_two_nondeterministic_runs_are_labelled_as_runs(bugs_report, only):
    result = backward_result(bugs_report, only, "NondeterministicBackward")
    assert result.value_labels == ("first run", "second run")
    labels = [label for label, _ in evidence(result)]
    assert "first run" in labels and "second run" in labels
    assert "analytical" not in labels and "numerical" not in labels
    assert result.to_dict()["value_labels"] == ["first run", "second run"]


def test_a_gradient_mismatch_keeps_the_analytical_and_numerical_labels(bugs_report, find):
    failure = next(r for r in find(bugs_report, check="finite_difference") if r.failed)
    assert failure.value_labels is None
    labels = [label for label, _ in evidence(failure)]
    assert "analytical" in labels and "numerical" in labels
    assert failure.to_dict()["value_labels"] is None


def test_nondet_tol_admits_a_small_nondeterminism(run_spec, only):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:NondeterministicBackward
        checks: [backward]
        tolerance: {{nondet_tol: 0.01}}
        cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert only(report, check="backward").status.value == "pass"


def test_gradient_for_a_literal_fails_naming_the_literal(bugs_report, only):
    result = backward_result(bugs_report, only, "GradientForLiteral")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (1, "alpha")
    assert "argument 1 (alpha)" in result.message
    assert "float" in result.message
    assert "None" in result.hint


def test_extra_trailing_none_is_accepted(run_spec, only):
    report = run_spec(
        f"""
        target: {STRUCTURAL}:ExtraTrailingNone
        checks: [backward]
        cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )
    result = only(report, check="backward")
    assert result.status.value == "pass"
    assert "1 gradient(s) for 1 argument(s)" in result.message


def test_backward_raising_fails_and_later_checks_do_not_pass(run_spec, find, only):
    report = run_spec(CRASH_SPEC)
    target = "tests.functions.mapping:BackwardRaises"
    assert only(report, target=target, check="forward").status.value == "pass"
    result = only(report, target=target, check="backward")
    assert result.status.value == "fail"
    assert "ZeroDivisionError" in result.message
    assert "backward exploded on purpose" in result.message
    value_checks = ("finite_difference", "gradcheck", "gradgradcheck")
    later = [r for r in find(report, target=target) if r.check in value_checks]
    assert len(later) == 3
    assert all(r.status.value in ("fail", "skip") for r in later)


def test_backward_is_skipped_when_nothing_requires_grad(run_spec, find):
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [forward, backward, finite_difference, gradcheck, gradgradcheck]
        cases: [{name: constant, inputs: [{shape: [4], requires_grad: false}]}]
        """
    )
    skipped = find(report, status="skip")
    assert [r.check for r in skipped] == [
        "backward",
        "finite_difference",
        "gradcheck",
        "gradgradcheck",
    ]
    assert all("requires grad" in r.message for r in skipped)
    assert find(report, check="forward", status="pass")


def test_an_ops_registered_backward_of_the_wrong_shape_is_said_in_our_words(run_spec, only):
    # torch raises "... returned an invalid gradient at index 0 - got [] but expected shape
    # compatible with [4]"; its index counts tensor arguments only (x is argument 1).
    import inspect

    from tests.functions import custom_ops

    report = run_spec(
        """
        target: "tests.functions.custom_ops:gradverify_tests::wrong_shape_grad"
        checks: [backward]
        cases: [{name: c, inputs: [2.0, {shape: [4]}]}]
        """
    )
    result = only(report, check="backward")
    assert result.status.value == "fail"
    assert result.message == (
        "the registered backward returns a gradient of shape [] for argument 1 (x), expected [4]"
    )
    assert (result.input_index, result.input_name) == (1, "x")
    assert result.source_file is not None and result.source_file.endswith("custom_ops.py")
    _, line = inspect.getsourcelines(custom_ops._wrong_shape_backward)
    assert result.source_line == line
    assert "expected shape compatible with [4]" in result.details[-1]  # torch's words kept
