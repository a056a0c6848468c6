"""Functions that write into their input and declare it with ctx.mark_dirty.

The dirty argument is passed as a clone of a leaf that requires grad, so forward may write
into it and the gradient reaching the leaf is checked by every check; an in-place write
without mark_dirty is still a `forward` failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gradverify.target.dirty import DirtyArguments, dirty_arguments
from gradverify.target.loading import load_target
from tests.functions import forms

ROOT = Path(__file__).resolve().parents[2]
FORMS_SPEC = ROOT / "tests" / "specs" / "checks" / "forms.yaml"
CORRECT = [
    ("tests.functions.forms:ExpInPlace", "vector"),
    ("tests.functions.forms:ExpInPlace", "matrix"),
    ("tests.functions.forms:ExpInPlaceNewStyle", "vector"),
    ("tests.functions.forms:ScaledAddInPlace", "vector"),
]
# The checks that call the Function and judge its gradient.
GRADIENT_CHECKS = {"backward", "layouts", "finite_difference", "gradcheck", "gradgradcheck"}


@pytest.fixture(scope="module")
def forms_report(run_spec):
    return run_spec(FORMS_SPEC)


@pytest.mark.parametrize(("target", "case"), CORRECT)
def test_a_correct_in_place_function_passes_every_check(forms_report, find, target, case):
    results = find(forms_report, target=target, case=case)
    assert GRADIENT_CHECKS | {"lint", "forward"} <= {r.check for r in results}
    problems = [
        (r.check, r.status.value, r.message)
        for r in results
        if r.status.value != "pass" and r.applies  # jvp, vmap, func: no rule, no setup_context
    ]
    assert problems == []
    assert all(r.status.value == "pass" for r in results if r.check in GRADIENT_CHECKS)


def test_a_wrong_backward_of_an_in_place_function_fails_at_its_element(forms_report, only):
    target = "tests.functions.forms:ExpInPlaceWrongBackward"
    result = only(forms_report, target=target, check="finite_difference")
    assert result.status.value == "fail"
    assert (result.input_index, result.element) == (0, (2,))
    assert result.analytical == pytest.approx(1.0)
    assert result.numerical == pytest.approx(torch.tensor(0.9).exp().item(), rel=1e-6)
    assert only(forms_report, target=target, check="forward").status.value == "pass"


def test_an_in_place_write_without_mark_dirty_still_fails_forward(forms_report, only):
    result = only(forms_report, target="tests.functions.forms:ExpInPlaceUnmarked", check="forward")
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert "modified argument 0 (x) in place" in result.message


def test_the_forward_check_says_the_dirty_argument_was_passed_as_a_clone(forms_report, only):
    result = only(forms_report, target="tests.functions.forms:ScaledAddInPlace", check="forward")
    assert result.status.value == "pass"
    assert any("argument 0 (x)" in note and "mark_dirty" in note for note in result.notes)
    assert not any("argument 1" in note for note in result.notes)


@pytest.mark.parametrize(
    ("function", "new_style", "expected"),
    [
        (forms.ExpInPlace, False, DirtyArguments((0,))),
        (forms.ExpInPlaceNewStyle, True, DirtyArguments((0,))),
        (forms.ScaledAddInPlace, False, DirtyArguments((0,))),
        (forms.ExpInPlaceUnmarked, False, DirtyArguments()),
    ],
)
def test_dirty_arguments_are_read_off_the_source(function, new_style, expected):
    assert dirty_arguments(function, new_style) == expected


def test_a_dirty_argument_that_cannot_be_placed_clones_every_tensor():
    class StarredDirty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            for tensor in tensors:
                tensor.mul_(2)
            ctx.mark_dirty(*tensors)
            return tensors

        @staticmethod
        def backward(ctx, *grads):
            return tuple(g * 2 for g in grads)

    assert dirty_arguments(StarredDirty, new_style=False) == DirtyArguments((), every=True)


def test_the_target_passes_clones_of_dirty_arguments_only(in_repo):
    target = load_target("tests.functions.forms:ScaledAddInPlace")
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    y = torch.rand(3, dtype=torch.float64, requires_grad=True)
    before = x.detach().clone()
    output = target.call(x, y, 0.5)
    assert torch.equal(x.detach(), before)  # the leaf itself is left alone
    (grad_x, grad_y) = torch.autograd.grad(output.sum(), (x, y))
    assert torch.allclose(grad_x, torch.ones(3, dtype=torch.float64))
    assert torch.allclose(grad_y, y.detach())
    assert not load_target("tests.functions.correct:Square").dirty
