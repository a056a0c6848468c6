"""Inference that covers (issue 16): several inferred cases, each reaching a path the base
case cannot, and each rule pinned by a Function where it must fire and one where it must
not (tests/functions/inference.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.inference.from_signature import Inference, infer
from gradverify.inference.reading.source import branch_points
from gradverify.inference.zeroconfig import InferenceError, infer_entry
from gradverify.results import Report, Status
from gradverify.run import session
from gradverify.run.session import RunOptions
from gradverify.target.loading import load_target
from tests.inference import runs

MODULE = "tests.functions.inference"


def inferred(name: str) -> Inference:
    return runs.inferred(f"{MODULE}:{name}")


def labels(name: str) -> list[str]:
    return [label for label, _ in inferred(name).extra]


def zero_config(name: str) -> Report:
    """The real zero-config run, in process, of the inferred cases alone (explore off: its
    other numbers would find the same bugs in the base case)."""
    return runs.zero_config(f"{MODULE}:{name}", explore=0)


def failed_cases(report: Report) -> dict[str, set[str]]:
    """case -> the arguments its failures name."""
    found: dict[str, set[str]] = {}
    for result in report.results:
        if result.status is Status.FAIL:
            found.setdefault(result.case, set()).add(result.message)
    return found


# --- dim: every valid value ------------------------------------------------------------------


def test_every_dim_of_a_dim_argument_is_tried() -> None:
    assert labels("Softmax") == ["x [3, 5], dim=0", "x [3, 5], dim=1", "x [2, 3, 4], dim=1"]


def test_a_backward_that_hard_codes_the_last_dim_fails_where_dim_is_another() -> None:
    report = zero_config("SoftmaxSumLast")

    assert not report.passed
    assert set(failed_cases(report)) == {
        "inferred: x [3, 5], dim=0",
        "inferred: x [2, 3, 4], dim=1",
    }


def test_a_backward_that_fails_at_one_dim_of_a_rank_forward_takes_fails_that_case() -> None:
    # x [3, 5] with dim=1 runs well, so dim=0 is a case of the same rank: backward raising
    # there is a finding, not a shape forward was not written for.
    report = zero_config("MeanUnsqueezesLast")

    assert "inferred: x [3, 5], dim=0" in failed_cases(report)
    assert "inferred: x [3, 5], dim=1" not in failed_cases(report)


def test_a_right_softmax_passes_every_inferred_case() -> None:
    report = zero_config("Softmax")

    assert report.passed
    assert report.summary.cases == 4


# --- ranks -----------------------------------------------------------------------------------


def test_a_bug_past_rank_1_is_caught_on_the_inferred_ranks() -> None:
    report = zero_config("LogSumExpFlat")

    assert set(failed_cases(report)) == {"inferred: x [3, 5]", "inferred: x [2, 3, 4]"}


def test_rank_4_where_forward_needs_nchw() -> None:
    inference = inferred("ChannelScale")

    assert [choice.shape for choice in inference.choices] == [(2, 3, 4, 5), (3,)]
    assert zero_config("ChannelScale").passed
    assert not zero_config("ChannelScaleForgotSum").passed


# --- a default that hides a bug --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "label"), [("ScaledLeakyReLU", "scale=2.0"), ("ShiftDropsOffset", "offset=0.5")]
)
def test_a_factor_of_1_and_an_offset_of_0_get_a_second_value(name: str, label: str) -> None:
    assert label in labels(name)


@pytest.mark.parametrize(
    ("name", "label"),
    [("LeakyReLUHardCodesSlope", "slope=0.02"), ("PowerHardCodesDegree", "degree=4")],
)
def test_a_backward_that_hard_codes_any_default_fails_on_its_second_value(
    name: str, label: str
) -> None:
    assert set(failed_cases(zero_config(name))) == {f"inferred: {label}"}


def test_a_forgotten_scale_fails_on_the_second_value_naming_it() -> None:
    report = zero_config("ScaledLeakyReLUDropsScale")

    failed = set(failed_cases(report))
    assert "inferred: scale=2.0" in failed  # and the case with every second value at once
    assert all("scale=2.0" in case for case in failed)
    assert zero_config("ScaledLeakyReLU").passed


# --- values past [-1, 1] ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "label"),
    [("HardSigmoidForgotUpperMask", "x [16] in [-7, 7]"),  # x > -3, and torch's 3
     ("ReLU6ForgotUpperMask", "x [16] in [-13, 13]")],  # torch's relu6, no literal 6
)  # fmt: skip
def test_a_mask_past_1_is_reached_by_a_wide_case_and_only_it_fails(name: str, label: str) -> None:
    assert set(failed_cases(zero_config(name))) == {f"inferred: {label}"}


def test_a_right_function_passes_its_wide_case() -> None:
    report = zero_config("HardSigmoid")

    assert report.passed
    assert "inferred: x [16] in [-7, 7]" in {r.case for r in report.results}


def test_no_wide_case_without_a_number_past_1() -> None:
    assert not any(" in [" in label for label in labels("Softmax"))


def test_only_what_is_compared_is_a_branch_point_not_dims_sizes_or_factors() -> None:
    from tests.functions.inference import (
        ChannelScale,
        ClipToLevels,
        HardSigmoidForgotUpperMask,
        Shapes,
    )

    assert branch_points(Shapes.forward, Shapes.backward).magnitudes == (0.0,)
    assert branch_points(HardSigmoidForgotUpperMask.backward).magnitudes == (3.0,)  # not / 6
    assert branch_points(HardSigmoidForgotUpperMask.forward).magnitudes == (3.0,)  # torch's
    assert {"qn", "qp"} <= branch_points(ClipToLevels.forward).names
    assert branch_points(ChannelScale.forward).magnitudes == ()  # x.dim() != 4: a shape


def test_no_wide_case_where_outputs_grow_past_what_central_differences_resolve() -> None:
    # the clamp at 30 asks for [-61, 61], where exp(20) outputs make the finite
    # differences measure rounding: that case is dropped, not reported
    assert not any(" in [" in label for label in labels("KLTermOfLogVariance"))
    assert zero_config("KLTermOfLogVariance").passed


def test_a_second_value_that_makes_forward_random_is_dropped() -> None:
    assert "training=True" not in labels("DropoutWhenTraining")
    assert zero_config("DropoutWhenTraining").passed


def test_a_module_constant_compared_with_is_a_branch_point() -> None:
    assert set(failed_cases(zero_config("HuberPastCutForgotten"))) == {
        "inferred: x [16] in [-7, 7]"
    }


def test_a_string_default_gets_each_other_string_it_is_compared_with() -> None:
    assert "reduction='sum'" in labels("SquaredErrorSumsAsMean")
    report = zero_config("SquaredErrorSumsAsMean")
    assert set(failed_cases(report)) == {"inferred: reduction='sum'"}


def test_a_default_compared_with_is_reached_and_a_factor_is_not() -> None:
    assert "x [16] in [-41, 41]" in labels("SoftThreshold")  # x > threshold, 20.0 by default
    assert not any(" in [" in label for label in labels("ScaledLeakyReLU"))  # scale * x


def test_bounds_by_name_lie_inside_the_range_so_a_forgotten_clamp_mask_fails() -> None:
    bounds = {c.name: c.value for c in inferred("ClampForgotMask").choices if c.kind == "number"}

    assert bounds == {"min": -0.5, "max": 0.5}
    assert "inferred" in failed_cases(zero_config("ClampForgotMask"))


# --- a tensor where None is the default -----------------------------------------------------


def test_a_bias_that_is_none_by_default_gets_a_tensor_and_its_gradient_is_checked() -> None:
    assert "bias [3]" in labels("LinearTanh")
    assert zero_config("LinearTanh").passed
    report = zero_config("LinearTanhForgotTanhForBias")
    assert set(failed_cases(report)) == {"inferred: bias [3]"}
    assert {r.input_name for r in report.results if r.status is Status.FAIL} == {"bias"}


def test_parameters_backward_leaves_none_become_numbers_together() -> None:
    chosen = {c.name: (c.kind, c.value) for c in inferred("ClipToLevels").choices}

    assert chosen["qn"] == chosen["qp"] == ("number", 0.5)


def test_a_parameter_forward_sums_as_a_list_gets_a_list_without_annotation() -> None:
    weights = inferred("WeightedByUnannotatedList").choices[1]

    assert (weights.kind, weights.value) == ("number", (0.5, 2))
    assert zero_config("WeightedByUnannotatedList").passed


def test_a_list_annotation_gets_a_list() -> None:
    weights = inferred("WeightedByList").choices[1]

    assert (weights.kind, weights.value) == ("number", (1.0,))
    assert zero_config("WeightedByList").passed


def test_an_optional_tensor_annotation_gets_a_tensor_too() -> None:
    assert set(failed_cases(zero_config("ScaleShiftOptionalWeight"))) == {"inferred: weight [4]"}


def test_a_mask_that_is_none_by_default_gets_a_bool_mask() -> None:
    (label, choices) = next(c for c in inferred("MaskedSumIgnoresMask").extra if "mask" in c[0])
    assert (label, choices[1].dtype) == ("mask [4]", "bool")
    assert set(failed_cases(zero_config("MaskedSumIgnoresMask"))) == {"inferred: mask [4]"}


def test_a_linear_input_gets_a_batch_dim() -> None:
    assert "x [2, 2, 4]" in labels("LinearBatchUsesLastRow")
    assert set(failed_cases(zero_config("LinearBatchUsesLastRow"))) == {"inferred: x [2, 2, 4]"}


def test_the_values_cases_change_are_also_tried_all_at_once() -> None:
    assert set(failed_cases(zero_config("ScaleThenBiasScalesBias"))) == {
        "inferred: scale=2.0, bias [4]"
    }


def test_a_second_value_is_also_tried_at_another_dim() -> None:
    assert set(failed_cases(zero_config("MeanKeepdimDividesByLast"))) == {
        "inferred: x [3, 5], dim=0, keepdim=True"
    }


# --- bools and epsilons ----------------------------------------------------------------------


def test_a_bool_default_gets_the_other_value() -> None:
    assert "keepdim=True" in labels("MeanKeepdimForgetsDivision")
    assert set(failed_cases(zero_config("MeanKeepdimForgetsDivision"))) == {
        "inferred: keepdim=True"
    }


def test_a_small_epsilon_gets_a_large_one_where_a_forgotten_one_shows() -> None:
    assert set(failed_cases(zero_config("RMSNormForgotEps"))) == {"inferred: eps=0.5"}


# --- broadcasting ----------------------------------------------------------------------------


def test_a_second_tensor_is_broadcast_where_forward_broadcasts() -> None:
    assert "x [3, 5], bias [5]" in labels("AddBias")


def test_no_broadcast_case_where_forward_refuses_one() -> None:
    assert labels("MulSameShape") == ["x [3, 5]", "x [2, 3, 4]"]
    assert zero_config("MulSameShape").passed


def test_a_broadcast_case_is_dropped_where_another_argument_does_not_fit_it() -> None:
    # The broadcast residual is kept beside x [3, 5] and a weight of [3, 5] whose gradient
    # backward sums to the last dim: the misfit is weight's, which the case did not vary.
    assert not any("residual [5]" in label for label in labels("AddThenScale"))
    assert zero_config("AddThenScale").passed


def test_an_unreduced_bias_gradient_is_found_out() -> None:
    report = zero_config("AddBiasUnreduced")

    flagged = [
        r
        for r in report.results
        if r.status in (Status.FAIL, Status.WARN) and r.check == "backward"
    ]
    assert [(r.case, "argument 1 (bias)" in r.message) for r in flagged] == [
        ("inferred: x [3, 5], bias [5]", True)
    ]


# --- complex ---------------------------------------------------------------------------------


def test_a_function_that_conjugates_runs_on_complex_inputs() -> None:
    (label, choices) = inferred("ConjMul").extra[-1]

    assert label == "complex128"
    assert {choice.dtype for choice in choices} == {"complex128"}
    assert zero_config("ConjMul").passed
    assert set(failed_cases(zero_config("ConjMulForgotConj"))) == {"inferred: complex128"}


def test_a_conjugate_in_backward_alone_is_a_sign_of_complex_numbers() -> None:
    # z * w: only backward's `z.conj()` shows that complex inputs are meant
    target = load_target("tests.functions.complex_functions:MulForgotConj")
    assert "complex128" in [label for label, _ in infer(target).extra]
    entry, note = infer_entry(target)
    report = session.run([entry], RunOptions(isolation=False, cache=False), [note])
    assert set(failed_cases(report)) == {"inferred: complex128"}


def test_a_function_of_complex_numbers_only_gets_complex_inputs() -> None:
    (z,) = inferred("Angle").choices

    assert (z.kind, z.dtype) == ("tensor", "complex128")
    assert zero_config("Angle").passed


def test_a_real_part_taken_in_backward_is_a_complex_output_not_complex_inputs() -> None:
    assert "complex128" not in labels("FourierOfReal")
    assert zero_config("FourierOfReal").passed


def test_a_real_part_of_an_intermediate_in_forward_is_no_sign_of_complex_inputs() -> None:
    assert "complex128" not in labels("CircularConvolution")
    assert zero_config("CircularConvolution").passed


def test_no_complex_case_without_a_sign_of_complex_numbers() -> None:
    assert "complex128" not in labels("AddBias")


# --- integer indices -------------------------------------------------------------------------


def test_indices_are_int64_valid_for_what_they_index_with_repeats() -> None:
    for _, choices in inferred("Embedding").cases:
        indices, weight = choices
        assert (indices.dtype, indices.low, indices.requires_grad) == ("int64", 0, False)
        assert indices.high == min(weight.shape) - 1
        assert indices.shape[0] > weight.shape[0]  # more indices than rows: values repeat


def test_an_assignment_where_accumulation_belongs_fails_zero_config() -> None:
    report = zero_config("EmbeddingAssigns")

    assert "inferred" in failed_cases(report)
    assert any("argument 1 (weight)" in message for message in failed_cases(report)["inferred"])
    assert zero_config("Embedding").passed


def test_an_int64_target_beside_float_logits() -> None:
    logits, target = inferred("NLLLoss").choices

    assert (logits.dtype, target.dtype) == ("float64", "int64")
    assert target.shape == logits.shape[:1] and target.high == 1
    assert zero_config("NLLLoss").passed


def test_a_mask_is_a_bool_tensor_of_the_masked_shape() -> None:
    x, mask = inferred("MaskedFillForgotMask").choices

    assert (mask.dtype, mask.shape, mask.requires_grad) == ("bool", x.shape, False)
    assert not zero_config("MaskedFillForgotMask").passed
    assert zero_config("MaskedFill").passed


def test_a_float_argument_is_not_taken_for_indices() -> None:
    assert {choice.dtype for choice in inferred("AddBias").choices} == {"float64"}


# --- a positive domain -----------------------------------------------------------------------


def test_a_positive_domain_where_forward_is_not_finite_on_minus_1_to_1() -> None:
    (x,) = inferred("Log").choices

    assert (x.low, x.high) == (0.1, 2.0)
    assert zero_config("Log").passed
    assert not zero_config("SafeLogForgotReciprocal").passed


def test_the_domain_stays_minus_1_to_1_where_forward_is_finite_there() -> None:
    (x, _) = inferred("Softmax").choices

    assert (x.low, x.high) == (-1.0, 1.0)


# --- what a run says it covered --------------------------------------------------------------


def test_the_note_and_json_say_which_cases_were_inferred(tmp_path: Path) -> None:
    target = f"{MODULE}:Softmax"
    result = CliRunner().invoke(app, ["check", "--no-cache", "--format", "json", target])

    assert result.exit_code == ExitCode.OK, result.output
    document = json.loads(result.stdout)
    cases = document["inferred"][target]
    assert [case["case"] for case in cases] == [
        "inferred", "inferred: x [3, 5], dim=0", "inferred: x [3, 5], dim=1", "inferred: x [2, 3, 4], dim=1",
    ]  # fmt: skip
    assert cases[1]["inputs"][1] == 0
    assert "4 cases (x [4]; x [3, 5], dim=0; x [3, 5], dim=1; x [2, 3, 4], dim=1)" in " ".join(
        document["notes"][0].split()
    )


def test_init_writes_the_same_cases_and_they_fail_on_the_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = f"{MODULE}:EmbeddingAssigns"

    result = CliRunner().invoke(app, ["init", target])

    assert result.exit_code == ExitCode.FAILED, result.output
    text = (tmp_path / "specs" / "embedding_assigns.yaml").read_text()
    assert "{shape: [6], dtype: int64, low: 0, high: 3, requires_grad: false}" in text
    assert "argument 1 (weight)" in result.output


def test_the_reason_inference_stopped_is_plain_text_naming_the_argument() -> None:
    with pytest.raises(InferenceError) as caught:
        infer_entry(load_target(f"{MODULE}:FixedShape"))

    assert caught.value.reason == (
        "forward rejected every shape tried for x (ValueError: x must be [5, 7], got [4])"
    )
    assert inferred("FixedShape").stopped == caught.value.reason
    assert inferred("Softmax").stopped is None


def test_a_pass_on_inferred_inputs_is_one_line_saying_what_it_covered() -> None:
    result = CliRunner().invoke(
        app, ["check", "tests.functions.inference:Softmax", "--no-cache", "--no-isolation"]
    )

    assert result.exit_code == ExitCode.OK, result.output
    [line] = [line for line in result.stdout.splitlines() if line.startswith("✓")]
    assert "tests.functions.inference:Softmax  inferred 4 cases ([4]; x [3, 5], dim=0;" in line
    assert "x [2, 3, 4], dim=1)" in result.stdout  # the line may wrap at the terminal's width


def test_a_finding_on_inferred_inputs_shows_each_case_on_its_own_line() -> None:
    result = CliRunner().invoke(
        app,
        ["check", "tests.functions.inference:SoftmaxSumLast", "--no-cache", "--no-isolation"],
    )

    assert result.exit_code == ExitCode.FAILED
    assert "✗ tests.functions.inference:SoftmaxSumLast  case inferred: x [3, 5], dim=0" in (
        result.stdout
    )
    assert "inferred 4 cases" not in result.stdout
