"""`expected_gradient` compares shapes too: a gradient autograd would sum back to the
argument's shape has the right values but the wrong shape, and fails naming both."""

from __future__ import annotations

import pytest

SPEC = """
target: tests.functions.forms:{name}
gradient: surrogate
expected_gradient: tests.functions.forms:straight_through
checks: [expected_gradient]
cases:
  - name: vector
    inputs: [{{shape: [4], low: -2.0, high: 2.0}}]
"""


def test_a_gradient_of_a_broadcast_shape_fails_naming_the_argument_and_both_shapes(run_spec, only):
    report = run_spec(SPEC.format(name="RoundStraightThroughUnsqueezed"))
    result = only(report, check="expected_gradient")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert result.message == (
        "backward returns a gradient of shape [1, 4] for argument 0 (x), whose shape is [4]"
    )
    assert "sums" in result.hint


def test_a_gradient_of_the_right_shape_and_values_passes(run_spec, only):
    report = run_spec(SPEC.format(name="RoundStraightThrough"))
    assert only(report, check="expected_gradient").status.value == "pass"


@pytest.mark.parametrize("name", ["RoundStraightThrough", "RoundStraightThroughUnsqueezed"])
def test_autograd_delivers_the_same_values_for_both(name):
    # The premise of the shape rule: comparing what autograd delivers cannot tell them apart.
    import torch

    from tests.functions import forms

    x = torch.tensor([0.3, -1.2, 1.7], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(getattr(forms, name).apply(x).sum(), x)
    assert grad.shape == x.shape
    assert torch.equal(grad, torch.ones(3, dtype=torch.float64))
