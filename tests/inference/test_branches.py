"""Inference that reaches both sides of a comparison between inputs, and a defaulted number
forward uses in arithmetic as a 0-d tensor that requires grad (issue 23): each rule with a
buggy Function whose bug only that rule reaches, and its correct twin
(tests/functions/branches.py)."""

from __future__ import annotations

from gradverify.inference.from_signature import Inference, infer
from gradverify.inference.reading.dataflow import flow_of
from gradverify.inference.rules.branches import compared_groups
from gradverify.results import Report
from gradverify.target.loading import load_target
from tests.functions import branches, inference
from tests.inference import runs
from tests.inference.runs import failed_cases

MODULE = "tests.functions.branches"


def inferred(name: str) -> Inference:
    return runs.inferred(f"{MODULE}:{name}")


def zero_config(name: str, seed: int | None = None) -> Report:
    return runs.zero_config(f"{MODULE}:{name}", seed)


# --- both sides of a comparison between inputs ---------------------------------------------


def test_a_comparison_reads_the_inputs_its_operands_derive_from() -> None:
    flow = flow_of(branches.BoxSDF.forward, branches.BoxSDF.backward, ("p", "half_extents"))

    assert compared_groups(flow) == [frozenset({"p", "half_extents"})]


def test_a_comparison_with_a_literal_is_no_comparison_between_inputs() -> None:
    hard_sigmoid = inference.HardSigmoid
    flow = flow_of(hard_sigmoid.forward, hard_sigmoid.backward, ("x",))

    assert compared_groups(flow) == []


def test_comparisons_of_dtypes_devices_shapes_or_identity_are_not_of_values() -> None:
    same_kind = branches.MulSameKind

    assert compared_groups(flow_of(same_kind.forward, same_kind.backward, ("x", "y"))) == []
    assert not [label for label, _ in inferred("MulSameKind").extra if " in [" in label]


def test_an_extent_compared_with_another_input_is_drawn_positive() -> None:
    choices = {choice.name: choice for choice in inferred("BoxSDF").choices}

    assert (choices["half_extents"].low, choices["half_extents"].high) == (0.1, 2.0)
    assert (choices["p"].low, choices["p"].high) == (-1.0, 1.0)


def test_cases_put_the_compared_extent_above_and_below_the_other_input() -> None:
    labels = [label for label, _ in inferred("BoxSDF").extra]

    assert labels[:2] == ["half_extents in [2, 3]", "half_extents in [0.01, 0.1]"]


def test_a_sign_bug_inside_the_box_fails_zero_config_on_the_case_inside() -> None:
    report = zero_config("BoxSDFInsideSign")

    assert not report.passed
    assert "inferred: half_extents in [2, 3]" in failed_cases(report)
    assert "inferred: half_extents in [0.01, 0.1]" not in failed_cases(report)


def test_a_right_box_sdf_passes_both_sides() -> None:
    report = zero_config("BoxSDF")

    assert report.passed
    assert report.summary.cases == 6


# --- a defaulted number in arithmetic: a 0-d tensor too ---------------------------------


def test_a_default_used_in_arithmetic_is_tried_as_a_0d_tensor_near_it() -> None:
    extra = dict(inferred("ExpScale").extra)

    alpha = extra["alpha [] near 0.5"][1]
    assert (alpha.shape, alpha.requires_grad, alpha.low, alpha.high) == ((), True, 0.375, 0.625)


def test_a_wrong_gradient_for_a_tensor_default_fails_zero_config() -> None:
    report = zero_config("ExpScaleAlphaGrad")

    assert failed_cases(report) == {"inferred: alpha [] near 0.5"}


def test_a_right_gradient_for_a_tensor_default_passes() -> None:
    assert zero_config("ExpScale").passed


def test_no_0d_tensor_case_where_backward_gives_the_default_no_gradient() -> None:
    # ScaledLeakyReLU's slope is used in arithmetic, but backward returns None for it: a
    # tensor slope is not what it was written for, and would be a false alarm.
    extra = infer(load_target("tests.functions.inference:ScaledLeakyReLU")).extra

    assert not [label for label, _ in extra if "[] near" in label]


# --- a number inference chose, compared with a tensor -----------------------------------


def test_a_number_compared_with_a_tensor_gets_cases_above_and_below_it() -> None:
    labels = [label for label, _ in inferred("NormClip").extra]

    assert labels[:2] == ["max_norm=2.5", "max_norm=-2.5"]


def test_a_bug_on_the_side_the_chosen_number_never_reaches_fails_zero_config() -> None:
    # max_norm 0.5 clips nearly every x [4] in [-1, 1]: only max_norm=2.5 leaves x as it is
    report = zero_config("NormClipDoublesBelow")

    assert failed_cases(report) == {"inferred: max_norm=2.5"}


def test_a_right_norm_clip_passes_both_sides() -> None:
    assert zero_config("NormClip").passed
