"""gradverify.verify and assert_gradients: checks on a Function already in hand."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import gradverify
from gradverify.errors import SpecError
from gradverify.examples.activations import ReLU
from gradverify.examples.buggy import ClippedReLUForgotMask
from gradverify.examples.swish import Swish
from gradverify.results import Status
from gradverify.spec.models import Tolerance
from tests.functions.correct import Scale
from tests.functions.report import LogOfZero


def test_tensors_are_passed_as_given_and_literals_as_they_are() -> None:
    # The bug is only where x > clip_val: element 1 of this tensor, with clip_val 1.0.
    x = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    report = gradverify.verify(ClippedReLUForgotMask, [x, 1.0], checks=["finite_difference"])
    assert not report.passed
    (result,) = report.results
    assert result.target == "gradverify.examples.buggy:ClippedReLUForgotMask"
    assert (result.case, result.check, result.status) == (
        "verify",
        "finite_difference",
        Status.FAIL,
    )
    assert (result.input_index, result.input_name, result.element) == (0, "x", (1,))
    assert (result.analytical, result.numerical) == pytest.approx((1.0, 0.0), abs=1e-6)
    assert x.grad is None  # checks work on copies


def test_spec_style_inputs_are_drawn_from_the_seed() -> None:
    state = torch.get_rng_state()
    report = gradverify.verify(Swish, [{"shape": [2, 3], "low": -3.0, "high": 3.0}, {"shape": []}])
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG is left alone
    assert report.passed
    checks = [result.check for result in report.results]
    assert checks[:3] == ["lint", "forward", "backward"] and "gradgradcheck" in checks

    def worst(seed: int) -> tuple[object, ...]:
        inputs = [{"shape": [16], "low": -3.0, "high": 3.0}, 1.0]
        found = gradverify.verify(
            ClippedReLUForgotMask, inputs, checks=["finite_difference"], seed=seed
        )
        (result,) = found.results
        return result.element, result.analytical, result.mismatched

    assert worst(3) == worst(3)
    assert worst(3) != worst(4)


def test_a_plain_callable_and_a_name() -> None:
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    report = gradverify.verify(
        lambda values, scale: values.sin() * scale, [x, 2.0], checks=["lint", "gradcheck"]
    )
    assert report.passed
    assert (
        report.results[0].target == f"{__name__}:test_a_plain_callable_and_a_name.<locals>.<lambda>"
    )
    assert report.results[0].status is Status.SKIP  # lint applies to Function subclasses only
    named = gradverify.verify(Scale, [x, 3.0], checks=["gradcheck"], name="mine:Scale")
    assert [(r.target, r.status) for r in named.results] == [("mine:Scale", Status.PASS)]


def test_spec_keys_are_passed_through() -> None:
    x = {"shape": [4]}
    surrogate = gradverify.verify(
        Scale, [x, 2.0], checks=["gradcheck"], gradient="surrogate", tolerance=Tolerance(atol=1e-7)
    )
    assert surrogate.results[0].status is Status.SKIP
    assert "surrogate" in surrogate.results[0].message
    loose = gradverify.verify(
        ClippedReLUForgotMask, [{"values": [2.0]}, 1.0], checks=["finite_difference"],
        tolerance={"atol": 2.0},
    )  # fmt: skip
    assert loose.passed  # an error of 1 is within atol 2


def test_arguments_a_spec_would_reject_raise_spec_errors() -> None:
    with pytest.raises(SpecError) as raised:
        gradverify.verify(Swish, [{"shap": [3]}, 1.0], checks=["gradchek"], tolerance={"atl": 1})
    message = raised.value.render()
    assert "gradverify.verify(): inputs[0].shap: unknown key 'shap'" in message
    assert "gradverify.verify(): tolerance.atl: unknown key 'atl'" in message
    assert "gradverify.verify(): checks[0]: an item of `checks:` must be one of 'lint'" in message
    with pytest.raises(SpecError, match="max_error` belongs to `gradient: approximate"):
        gradverify.verify(Swish, [{"shape": [3]}, {"shape": []}], max_error=0.1)
    with pytest.raises(TypeError, match="not an import path"):
        gradverify.verify("gradverify.examples.swish:Swish", [{"shape": [3]}])  # type: ignore[arg-type]


def test_assert_gradients_raises_with_the_clis_explanation() -> None:
    # Two elements above the clip, two below: enough on each side for the region hint.
    x = torch.tensor([0.5, 2.0, -1.0, 1.5], dtype=torch.float64, requires_grad=True)
    with pytest.raises(AssertionError) as raised:
        gradverify.assert_gradients(
            ClippedReLUForgotMask, [x, 1.0], checks=["finite_difference", "gradcheck"]
        )
    lines = [line.strip("│ ") for line in str(raised.value).splitlines()]
    assert lines[0] == "gradverify.examples.buggy:ClippedReLUForgotMask  case verify"
    assert "element       [1]" in lines
    assert "analytical    1" in lines and "numerical     0" in lines
    assert any(line.startswith("likely cause  wrong only where x > 1") for line in lines)
    assert "gradcheck: the same finding as finite_difference" in lines  # once, as the CLI does

    report = gradverify.assert_gradients(Swish, [{"shape": [3]}, {"shape": []}], checks=["jvp"])
    assert report.passed and report.results[0].status is Status.SKIP


def test_assert_gradients_tells_one_root_cause_once() -> None:
    x = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    checks = ["forward", "backward", "finite_difference", "gradcheck"]
    with pytest.raises(AssertionError) as raised:
        gradverify.assert_gradients(LogOfZero, [x], checks=checks)
    explained = str(raised.value)
    assert explained.count("╭─") == 1  # forward's -inf, once
    assert "  backward: the same finding as forward" in explained.splitlines()


def test_assert_gradients_turns_warnings_into_python_warnings() -> None:
    at_kink = [{"values": [-1.0, 0.0, 2.0]}]
    with pytest.warns(
        gradverify.GradverifyWarning,
        match=r"\[verify\] finite_difference \(x\): non-differentiable",
    ):
        report = gradverify.assert_gradients(ReLU, at_kink, checks=["finite_difference"])
    assert report.results[0].status is Status.WARN


def test_importing_gradverify_stays_free_of_torch() -> None:
    code = (
        "import sys, gradverify\n"
        "api = (gradverify.verify, gradverify.assert_gradients, gradverify.GradverifyWarning)\n"
        "print('torch' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"
    with pytest.raises(AttributeError, match="no attribute 'verfy'"):
        gradverify.verfy  # noqa: B018
