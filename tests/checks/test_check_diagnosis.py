"""Hints: the likely cause of a mismatch, named from the pattern of the errors."""

from __future__ import annotations

import pytest
import torch

from gradverify.numerics.compare import compare
from gradverify.numerics.diagnosis import diagnose

ATOL, RTOL = 1e-5, 1e-3


def hint_for(analytical, numerical, argument=None, name="x"):
    off = compare(analytical, numerical, ATOL, RTOL).off
    return diagnose(analytical, numerical, off, argument, name, ATOL, RTOL)


def diagonal(values):
    return torch.diag(torch.tensor(values, dtype=torch.float64))


# The bundled buggy examples, as a user sees them.


def test_forgotten_upper_mask_is_located_by_region(buggy_report, only):
    result = only(
        buggy_report,
        target="gradverify.examples.buggy:ClippedReLUForgotMask",
        check="finite_difference",
    )
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert "wrong only where x > 1" in result.hint
    assert (result.analytical, result.numerical) == (1.0, pytest.approx(0.0))


def test_transposed_weight_gradient_is_named(buggy_report, find):
    results = find(
        buggy_report,
        target="gradverify.examples.buggy:LinearTransposedWeightGrad",
        check="finite_difference",
    )
    assert [(r.input_name, r.status.value) for r in results] == [
        ("input", "pass"),
        ("weight", "fail"),
    ]
    assert "gradient of weight is transposed" in results[1].hint


def test_only_beta_of_swish_is_wrong(buggy_report, find):
    results = find(
        buggy_report, target="gradverify.examples.buggy:SwishWrongBeta", check="finite_difference"
    )
    assert [(r.input_index, r.status.value) for r in results] == [(0, "pass"), (1, "fail")]
    assert results[1].element == ()  # beta is 0-d


# Each pattern on its own, from hand-made Jacobians.


def test_no_hint_when_nothing_is_off():
    block = diagonal([1.0, 2.0])
    assert hint_for(block, block) is None


def test_opposite_sign():
    assert "opposite sign" in hint_for(diagonal([-1.0, 2.0]), diagonal([1.0, -2.0]))


@pytest.mark.parametrize(
    ("factor", "words"),
    [(3.0, "constant factor 3 "), (1 / 8, "constant factor 1/8"), (1.7, "constant factor 1.7")],
)
def test_constant_factor(factor, words):
    numerical = diagonal([1.0, -2.0, 0.5])
    assert words in hint_for(numerical * factor, numerical)


def test_negative_factor_mentions_the_sign_too():
    numerical = diagonal([1.0, -2.0, 0.5])
    hint = hint_for(numerical * -2, numerical)
    assert "factor 2 and the opposite sign" in hint


def test_transposed_jacobian():
    numerical = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    assert "Jacobian is transposed" in hint_for(numerical.T.clone(), numerical)


def test_all_zero_gradient():
    assert "returns zero for w everywhere" in hint_for(
        torch.zeros(2, 2, dtype=torch.float64), diagonal([1.0, 2.0]), name="w"
    )


def test_nonzero_gradient_where_the_function_is_flat():
    hint = hint_for(diagonal([1.0, 0.0]), torch.zeros(2, 2, dtype=torch.float64))
    assert "numerical gradient is zero" in hint
    assert "declare `gradient: surrogate`" in hint


def test_a_single_number_without_effect_is_not_taken_for_a_straight_through_estimator():
    # PACT's clip level alpha above every input: no output depends on it, and backward's mask
    # for its gradient keeps elements anyway. A bug, with nothing piecewise constant about it.
    analytical = torch.tensor([[1.0], [0.0], [1.0]], dtype=torch.float64)
    numerical = torch.zeros(3, 1, dtype=torch.float64)
    alpha = torch.tensor(0.7, dtype=torch.float64)

    hint = hint_for(analytical, numerical, alpha, name="alpha")

    assert "alpha does not change the output" in hint
    assert "surrogate" not in hint


@pytest.mark.parametrize(
    ("values", "wrong", "words"),
    [
        ([-1.0, 0.2, 0.8, 1.0], [False, False, True, True], "wrong only where x > 0.5"),
        ([-1.0, -0.8, -0.2, 1.0], [True, True, False, False], "wrong only where x < -0.5"),
        # a cut-off that rounds to zero from below reads 0, not -0
        ([-1.0, -0.1, 0.08, 1.0], [True, True, False, False], "wrong only where x < 0 ("),
    ],
)
def test_region_of_an_elementwise_function(values, wrong, words):
    argument = torch.tensor(values, dtype=torch.float64)
    numerical = diagonal([1.0, 1.0, 1.0, 1.0])
    analytical = numerical.clone()
    for index, is_wrong in enumerate(wrong):
        if is_wrong:
            analytical[index, index] = 0.0
    hint = hint_for(analytical, numerical, argument)
    assert words in hint
    assert "2 of 4 elements" in hint


def test_no_region_when_wrong_and_right_elements_interleave():
    argument = torch.tensor([-1.0, -0.5, 0.5, 1.0], dtype=torch.float64)
    numerical = diagonal([1.0, 1.0, 1.0, 1.0])
    analytical = diagonal([0.0, 1.0, 0.0, 1.0])
    hint = hint_for(analytical, numerical, argument)
    assert hint is None or "wrong only where" not in hint


def test_no_hint_for_unpatterned_errors():
    generator = torch.Generator().manual_seed(0)
    numerical = torch.rand(3, 4, generator=generator, dtype=torch.float64) + 0.5
    analytical = torch.rand(3, 4, generator=generator, dtype=torch.float64) + 0.5
    assert hint_for(analytical, numerical) is None


# Each hint needs evidence: where it must appear, and where it must not.


def test_a_factor_seen_on_too_few_entries_is_no_evidence():
    numerical = diagonal([1.0, -2.0])
    assert hint_for(numerical / 2, numerical) is None


def test_a_factor_that_does_not_explain_every_entry_well_is_no_evidence():
    numerical = diagonal([1.0, -2.0, 0.5, 1.5])
    analytical = numerical * 0.99 + diagonal([0.0, 0.0, 0.0, 2e-4])  # 0.99 ± noise
    hint = hint_for(analytical, numerical)
    assert hint is None or "factor" not in hint


def test_entries_of_one_size_cannot_tell_a_factor_from_a_clip_without_backward():
    numerical = torch.ones(2, 3, dtype=torch.float64)  # a sum: every entry is 1
    analytical = numerical / 4
    off = compare(analytical, numerical, ATOL, RTOL).off

    def diagnosis(linear):
        return diagnose(analytical, numerical, off, None, "x", ATOL, RTOL, lambda: linear)

    assert hint_for(analytical, numerical) is None
    assert diagnosis(None) is None
    assert "constant factor 1/4" in diagnosis(True)
    clipped = diagnosis(False)
    assert "caps the gradient at 0.25" in clipped and "`gradient: surrogate`" in clipped
    assert "factor" not in clipped and "mean where a sum belongs" not in clipped


def test_a_gradient_capped_where_large_is_named_a_clip():
    numerical = diagonal([0.2, -0.4, 1.5, -3.0, 0.8])
    analytical = numerical.clamp(-1.0, 1.0)
    hint = hint_for(analytical, numerical)
    assert hint.startswith("backward caps the gradient at 1 ")
    assert "`gradient: surrogate`" in hint


def test_a_clip_pattern_is_not_named_when_backward_is_linear():
    numerical = diagonal([0.2, -0.4, 1.5, -3.0, 0.8])
    analytical = numerical.clamp(-1.0, 1.0)
    off = compare(analytical, numerical, ATOL, RTOL).off
    hint = diagnose(analytical, numerical, off, None, "x", ATOL, RTOL, lambda: True)
    assert hint is None or "caps" not in hint


def test_a_nonlinear_backward_with_no_other_pattern_points_at_surrogates():
    generator = torch.Generator().manual_seed(0)
    numerical = torch.rand(3, 4, generator=generator, dtype=torch.float64) + 0.5
    analytical = torch.rand(3, 4, generator=generator, dtype=torch.float64) + 0.5
    off = compare(analytical, numerical, ATOL, RTOL).off
    hint = diagnose(analytical, numerical, off, None, "x", ATOL, RTOL, lambda: False)
    assert "not linear in grad_output" in hint and "`gradient: surrogate`" in hint
    assert diagnose(analytical, numerical, off, None, "x", ATOL, RTOL, lambda: True) is None


def test_opposite_sign_names_the_surrogate_declaration_too():
    hint = hint_for(diagonal([-1.0, 2.0]), diagonal([1.0, -2.0]))
    assert "flipped sign" in hint and "gradient-reversal layer" in hint
    assert "`gradient: surrogate`" in hint


def test_a_region_needs_two_wrong_elements():
    argument = torch.tensor([-1.0, 0.2, 0.8, 1.0], dtype=torch.float64)
    numerical = diagonal([1.0, 1.0, 1.0, 1.0])
    analytical = diagonal([1.0, 1.0, 1.0, 0.0])
    hint = hint_for(analytical, numerical, argument)
    assert hint is None or "wrong only where" not in hint


def test_no_region_for_noise_that_happens_to_fall_under_the_tolerance():
    argument = torch.tensor([-1.0, -0.5, 0.5, 1.0], dtype=torch.float64)
    numerical = diagonal([1.0, 1.0, 1.0, 1.0])
    # Small errors everywhere: under the tolerance (1e-3) on the left, just over on the right.
    analytical = numerical + diagonal([6e-4, -8e-4, 2e-3, -3e-3])
    hint = hint_for(analytical, numerical, argument)
    assert hint is None or "wrong only where" not in hint


# The same, on real Functions (tests/functions/hints.py).

HINTS = "tests.functions.hints"


def fd_failure(run_spec, only, name, inputs, case="case"):
    report = run_spec(
        f"""
        target: {HINTS}:{name}
        gradient: exact
        checks: [finite_difference]
        cases: [{{name: {case}, inputs: {inputs}}}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    return result


@pytest.mark.parametrize(
    ("name", "inputs", "words"),
    [
        ("SumMeanInsteadOfSum", "[{shape: [3, 4]}]", "constant factor 1/4"),
        ("SquareHalved", "[{shape: [5]}]", "constant factor 1/2"),
    ],
)
def test_a_wrong_constant_is_named_a_factor(run_spec, only, name, inputs, words):
    hint = fd_failure(run_spec, only, name, inputs).hint
    assert words in hint and "likely a division" in hint
    assert "surrogate" not in hint


@pytest.mark.parametrize(
    ("name", "inputs", "level"),
    [
        ("GradientClipping", "[{shape: [6]}]", "0.5"),
        ("ScaledGradientClipping", "[{shape: [6]}]", "1"),
        ("SquareClippedGradient", "[{shape: [8], low: -1.0, high: 1.0}]", "1"),
    ],
)
def test_a_clipping_surrogate_is_not_told_it_is_off_by_a_factor(
    run_spec, only, name, inputs, level
):
    hint = fd_failure(run_spec, only, name, inputs).hint
    assert hint.startswith(f"backward caps the gradient at {level} ")
    assert "declare `gradient: surrogate`" in hint
    assert "factor" not in hint and "mean where a sum belongs" not in hint


def test_clipping_before_the_chain_rule_is_told_backward_is_not_linear(run_spec, only):
    inputs = "[{shape: [8], low: -1.0, high: 1.0}]"
    hint = fd_failure(run_spec, only, "SquareClippedGradOutput", inputs).hint
    assert hint.startswith("backward is not linear in grad_output")
    assert "declare `gradient: surrogate`" in hint
    assert "factor" not in hint


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("GradientReversal", "opposite sign everywhere"),
        ("ScaledGradientReversal", "constant factor 1/2 and the opposite sign"),
    ],
)
def test_a_gradient_reversal_layer_is_pointed_at_surrogate(run_spec, only, name, words):
    hint = fd_failure(run_spec, only, name, "[{shape: [6]}]").hint
    assert words in hint
    assert "gradient-reversal layer" in hint and "declare `gradient: surrogate`" in hint


def test_a_mask_bug_is_located_by_region(run_spec, only):
    inputs = "[{shape: [20], low: -2.0, high: 2.0}]"
    hint = fd_failure(run_spec, only, "LeakyReLUWrongAboveOne", inputs).hint
    assert hint.startswith("wrong only where x > 1 (")


@pytest.mark.parametrize(
    ("size", "noise", "seed"),
    # Each of these drew "wrong only where x > …" or a constant factor from noise before
    # (the case name seeds the inputs: keep it).
    [(4, 0.001, 7), (8, 0.003, 6), (8, 0.001, 11), (4, 0.001, 14)],
)
def test_a_noisy_gradient_gets_no_mask_or_factor_hint(run_spec, only, size, noise, seed):
    inputs = f"[{{shape: [{size}]}}, {noise}, {seed}]"
    result = fd_failure(run_spec, only, "NoisySin", inputs, case="c")
    assert result.hint is None or (
        "wrong only where" not in result.hint and "factor" not in result.hint
    )
