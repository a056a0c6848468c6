"""One rule for intent (gradverify.inference.reading.intent, judged by gradverify.engine.intent): the
derivative of forward is the contract unless the spec, [tool.gradverify] surrogates, the
words around the Function or its construction say otherwise, argument by argument. The
four shapes of surrogate met in real packages pass with their evidence named; a forgotten
mask under `clamp`, and a wrong gradient beside a surrogate one, still fail."""

from __future__ import annotations

import pytest

from gradverify.inference.reading.intent import constructed, declaration, phrase, said
from gradverify.results import Report, Status
from gradverify.spec.config import conventional_surrogate
from gradverify.target.loading import load_target
from tests.inference.runs import zero_config

FUNCTIONS = "tests.functions.intent"


def failures(report: Report) -> set[tuple[str, str | None]]:
    return {(r.check, r.input_name) for r in report.results if r.status is Status.FAIL}


def evidence(report: Report) -> dict[str | None, str]:
    return {r.input_name: r.surrogate for r in report.results if r.surrogate is not None}


@pytest.mark.parametrize(
    ("name", "argument", "why"),
    [
        ("Spike", "v", "piecewise constant in v (`v > 0`)"),
        ("ScaleGrad", "x", "forward returns x unchanged"),
        ("Route", "x_r", "does not depend on x_r"),
        ("Fire", "p", "piecewise constant in p (`torch.bernoulli(p)`)"),
    ],
)
def test_a_surrogate_by_construction_passes_naming_its_evidence(
    name: str, argument: str, why: str
) -> None:
    report = zero_config(f"{FUNCTIONS}:{name}", explore=0)

    assert failures(report) == set()
    assert why in evidence(report)[argument]
    assert set(evidence(report)) == {argument}  # per argument: Route's x is still compared


def test_a_forgotten_mask_under_clamp_fails_with_the_line_that_declares_intent() -> None:
    report = zero_config(f"{FUNCTIONS}:Clamp", explore=0)

    assert ("finite_difference", "x") in failures(report)
    failed = next(r for r in report.results if r.check == "finite_difference" and r.failed)
    assert "declare `gradient: surrogate`" in (failed.hint or "")  # the hint offers it once
    assert declaration(f"{FUNCTIONS}:Clamp") not in failed.notes


def test_a_wrong_gradient_beside_a_surrogate_one_still_fails() -> None:
    report = zero_config(f"{FUNCTIONS}:RouteWrong", explore=0)

    assert ("finite_difference", "x") in failures(report)
    assert ("finite_difference", "x_r") not in failures(report)
    assert set(evidence(report)) == {"x_r"}
    failed = next(r for r in report.results if r.check == "finite_difference" and r.failed)
    assert declaration(f"{FUNCTIONS}:RouteWrong") in failed.notes  # the line that declares it
    assert 'surrogates = ["tests.functions.intent.RouteWrong"]' in failed.notes[-1]


def test_words_that_declare_intent_are_read_and_others_are_not() -> None:
    assert phrase("Surrogate function for the Heaviside step.") == "Surrogate function"
    assert phrase("The gradient is clearly not the analytical solution.") is not None
    assert phrase("Returns a pseudo-gradient.") == "pseudo-gradient"
    assert phrase("# STE") == "STE"
    assert phrase("A surrogate loss for PPO.") is None
    assert phrase("Paste the steps into the buffer.") is None


def test_a_comment_in_the_body_declares_intent() -> None:
    target = load_target(f"{FUNCTIONS}:CommentedEstimator")

    assert said(target) == "a comment in its body says 'STE'"
    assert failures(zero_config(f"{FUNCTIONS}:CommentedEstimator", explore=0)) == set()


def test_a_module_docstring_speaks_for_a_function_only_when_it_is_the_modules_only_one() -> None:
    # tests/functions/intent.py holds many Functions: its docstring is no one's evidence
    assert said(load_target(f"{FUNCTIONS}:Clamp")) is None
    only = load_target("tests.functions.intent_alone:Quantize")
    assert said(only) == "the docstring of module tests.functions.intent_alone says 'STE'"


def test_a_config_pattern_names_targets_by_their_dotted_path() -> None:
    assert conventional_surrogate("pkg.lie.groups:Exp", ["pkg.lie.*"])
    assert conventional_surrogate("src/pkg/lie.py:Exp", ["src.pkg.lie.Exp"])
    assert not conventional_surrogate("pkg.nn:Exp", ["pkg.lie.*"])


def test_a_dtype_forward_makes_with_exact_values_is_a_warning_naming_its_line() -> None:
    report = zero_config(f"{FUNCTIONS}:SpikeFloat32", explore=0)
    warned = [r for r in report.results if r.check == "backward" and r.status is Status.WARN]

    assert failures(report) == set()
    assert warned and "float32, as forward's outputs are (made at" in warned[0].message
    assert "intent.py:" in warned[0].message
    rounded = zero_config(f"{FUNCTIONS}:Float32Roughly", explore=0)
    assert ("backward", "x") in failures(rounded)  # values the cast rounded: precision lost


def test_a_precondition_compared_in_forward_is_no_step_of_the_output() -> None:
    target = load_target(f"{FUNCTIONS}:SaturateForgotMask")
    import torch

    flat_out = (torch.full((4,), 3.0, dtype=torch.float64), 0.5, 1.0)  # all saturated
    assert constructed(target, flat_out, 0) is None


def test_a_classmethod_forward_maps_its_arguments_past_ctx() -> None:
    target = load_target(f"{FUNCTIONS}:ClassmethodCube")
    import torch

    x = torch.linspace(-1, 1, 5, dtype=torch.float64)
    assert constructed(target, (x,), 0) is None  # ctx is no argument forward ignores
    report = zero_config(f"{FUNCTIONS}:ClassmethodCube", explore=0)
    assert ("finite_difference", "x") in failures(report)
