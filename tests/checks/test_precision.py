"""Lost precision is not a kink: float32 rounding inside a float64 case fails as such, is never
excused, and never makes inputs be drawn again; real kinks and jumps still warn."""

from __future__ import annotations

import pytest
import torch

from gradverify.numerics.kinks import find_kinks
from gradverify.numerics.noise import faint_rows, noise_rows
from gradverify.numerics.sampling import line_through, sample

ROUNDING = "errors of the size of float32 rounding"


def spec(target: str, inputs: str, checks: str, mode: str = "full") -> str:
    return f"""
        target: tests.functions.precision:{target}
        checks: [{checks}]
        mode: {mode}
        cases:
          - name: case
            inputs: [{inputs}]
        """


@pytest.fixture(scope="module")
def forward_in_float32(run_spec):
    return run_spec(spec("SinForwardInFloat32", "{shape: [32]}", "finite_difference, gradcheck"))


@pytest.mark.parametrize("check", ["finite_difference", "gradcheck"])
def test_a_forward_in_float32_fails_as_lost_precision(forward_in_float32, only, check):
    result = only(forward_in_float32, check=check)
    assert result.status.value == "fail"
    assert result.hint.startswith(f"{ROUNDING} spread over {result.mismatched} elements")
    assert "forward or backward computes in float32?" in result.hint
    assert not any("excused" in note for note in result.notes)


def test_a_forward_in_float32_has_no_inputs_drawn_again(forward_in_float32):
    assert not any("re-drew" in note for note in forward_in_float32.notes)


def test_a_backward_in_float32_fails_gradgradcheck_as_its_lost_precision(run_spec, find):
    report = run_spec(spec("SinBackwardInFloat32", "{shape: [32]}", "gradgradcheck"))
    results = find(report, check="gradgradcheck")
    assert results and all(r.status.value == "fail" for r in results)
    for result in results:
        assert result.hint.startswith(ROUNDING)
        assert "(backward's values are rough" in result.hint
    assert report.notes == ()


def test_a_correct_sine_passes_with_inputs_untouched(run_spec):
    report = run_spec(spec("Sin", "{shape: [32]}", "finite_difference, gradcheck, gradgradcheck"))
    assert [r.status.value for r in report.results] == ["pass", "pass", "pass"]
    assert report.notes == ()


def test_a_clamp_at_its_bounds_still_warns_as_kinks(run_spec, only):
    report = run_spec(
        spec(
            "Clamp",
            "{values: [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]}",
            "finite_difference, gradcheck, gradgradcheck",
        )
    )
    for check in ("finite_difference", "gradcheck", "gradgradcheck"):
        result = only(report, check=check)
        assert result.status.value == "warn"
        assert result.element == (1,)  # x == -1.0; x == 1.0 is the one more element
        assert "1 more element" in result.message


def test_generated_inputs_near_a_clamp_bound_are_still_drawn_again(run_spec):
    report = run_spec(spec("Clamp", "{shape: [40], low: 0.99999, high: 1.00001}", "forward"))
    (note,) = report.notes
    assert "re-drew" in note


def test_a_jump_says_why_the_central_difference_is_so_large(run_spec, only):
    report = run_spec(spec("Step", "{values: [-2.0, 0.0, 0.5]}", "finite_difference"))
    result = only(report, check="finite_difference")
    assert result.status.value == "warn"
    assert result.numerical == pytest.approx(5e5)
    assert "a jump of 1 here (left slope 0, right slope 0)" in result.message
    assert "jump / (2·eps) = 5e+05, means nothing" in result.message
    assert result.hint.startswith("a jump (as a step at 0)")


def test_a_kink_in_the_gradient_explains_the_second_derivative_it_sits_beside(run_spec, only):
    report = run_spec(spec("Clamp", "{values: [-2.0, -1.0, 0.0, 0.5]}", "gradgradcheck"))
    result = only(report, check="gradgradcheck")
    assert result.status.value == "warn"
    assert abs(result.numerical) > 1e4  # the gradient jumps at -1: a huge central difference
    assert "a jump of" in result.message and "means nothing" in result.message


def test_a_kink_without_a_jump_keeps_the_plain_slopes(run_spec, only):
    report = run_spec(spec("Clamp", "{values: [-1.0, 0.5]}", "finite_difference"))
    result = only(report, check="finite_difference")
    assert "left slope 0, right slope 1; analytical 0 lies between them" in result.message
    assert "jump" not in result.message


def test_a_forward_in_float32_with_jvp_fails_jvp_as_lost_precision(run_spec, only):
    report = run_spec(spec("SinForwardInFloat32WithJvp", "{shape: [16]}", "jvp"))
    result = only(report, check="jvp")
    assert result.status.value == "fail"
    assert result.hint.startswith(ROUNDING)
    assert not any("non-differentiable" in note for note in result.notes)


def test_randomized_mode_says_lost_precision_at_every_entry_localized(run_spec, only):
    report = run_spec(
        spec("SinForwardInFloat32", "{shape: [64]}", "finite_difference", "randomized")
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.hint.startswith(f"{ROUNDING} at every entry localized")
    assert result.mismatched_at_least
    assert not any("excused" in note for note in result.notes)


# The classification itself, on lines through one input element.

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3


def classify(forward, x: float) -> str:
    argument = torch.tensor([x], dtype=torch.float64)
    line = line_through(lambda a: [forward(a)], [argument], 0, torch.ones(1, dtype=torch.float64))
    values = sample(line, EPS)
    off = torch.ones(1, 1, dtype=torch.bool)
    numerical = ((values[-1] - values[0]) / (2 * EPS)).reshape(1, 1)
    found = find_kinks(
        lambda a: [forward(a)], [argument], 0, off, numerical, numerical, EPS, ATOL, RTOL
    )
    if found.noise:
        return "noise"
    return "kink" if found.kinks else "smooth"


FLOAT32_FORWARDS = {
    "sin": lambda x: x.float().sin().double(),
    "exp": lambda x: x.float().exp().double(),
    "cubic": lambda x: (x.float() ** 3 - 2 * x.float()).double(),
    "output only": lambda x: x.sin().float().double(),
    "mixed": lambda x: x.float().sin().double() + 0.1 * x,
}


@pytest.mark.parametrize("name", FLOAT32_FORWARDS)
def test_float32_rounding_is_never_a_kink(name):
    forward = FLOAT32_FORWARDS[name]
    points = torch.linspace(-0.95, 0.95, 97, dtype=torch.float64).tolist()
    assert "kink" not in {classify(forward, x) for x in points}


KINKED = {
    "clamp": lambda x: x.clamp(-1.0, 1.0),
    "relu": lambda x: x.clamp_min(0.0),
    "scaled clamp": lambda x: 5 * (3 * x).clamp(-1.0, 1.0),
    "clamped square": lambda x: (x * x).clamp(max=1.0),
    "step": lambda x: (x > 0).to(x.dtype),
}


@pytest.mark.parametrize("name", KINKED)
@pytest.mark.parametrize("offset", [0.0, 0.3e-6, -0.3e-6, 0.7e-6, -0.7e-6])
def test_a_kink_within_eps_is_never_noise(name, offset):
    forward = KINKED[name]
    kink = {"clamp": 1.0, "relu": 0.0, "scaled clamp": 1 / 3, "clamped square": 1.0}.get(name, 0.0)
    assert classify(forward, kink + offset) == "kink"


def test_a_faint_kink_is_as_faint_as_float32_rounding():
    # Why size alone decides nothing: a clamp at 1 is rough by no more than float32 rounding.
    argument = torch.tensor([1.0], dtype=torch.float64)
    line = line_through(lambda a: [a.clamp(max=1.0)], [argument], 0, torch.ones(1))
    values = sample(line, EPS)
    faint = faint_rows(values, EPS, 1.0)
    assert faint.all()
    assert not noise_rows(line, values, EPS, faint, ATOL, RTOL).any()
