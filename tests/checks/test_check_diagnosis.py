"""Hints: the likely cause of a mismatch, named from the pattern of the errors."""

from __future__ import annotations

import pytest
import torch

from gradverify.checks.compare import compare
from gradverify.checks.diagnosis import diagnose

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


@pytest.mark.parametrize(
    ("values", "wrong", "words"),
    [
        ([-1.0, 0.2, 0.8, 1.0], [False, False, True, True], "wrong only where x > 0.5"),
        ([-1.0, -0.8, -0.2, 1.0], [True, True, False, False], "wrong only where x < -0.5"),
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
