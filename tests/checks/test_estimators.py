"""A random forward whose backward is an unbiased estimator of the derivative of forward's
expectation (not the derivative of the sample it returns) is a warning, not a failure; a
biased one still fails, with the evidence (gradverify.engine.random_forward)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.engine import random_forward
from gradverify.exitcodes import ExitCode
from gradverify.numerics.expectation import DRAWS, varies_with_seed
from gradverify.results import Status
from tests.functions import correct, estimators

SPEC = """
target: tests.functions.estimators:{name}
{extra}
cases:
  - name: sample
    inputs: {inputs}
"""
ONE = "[{shape: [6]}]"
TWO = "[{shape: [5]}, {shape: []}]"  # loc, scale
FIRST_ORDER = ("finite_difference", "gradcheck")
UNBIASED = f"agrees with it on average over {DRAWS} draws"
ANY_LOSS = "for linear and quadratic losses of the outputs alike"
MEAN_ONLY = "for linear losses of the outputs only, not for quadratic ones"
BIASED = "forward is random, and backward is biased on average"


def verdicts(report, index=None):
    """check -> the first-order result about argument `index` (each of them)."""
    return {
        r.check: r
        for r in report.results
        if r.check in FIRST_ORDER and (index is None or r.input_index == index)
    }


def run(run_spec, name, inputs=ONE, extra=""):
    return run_spec(SPEC.format(name=name, extra=extra, inputs=inputs))


def test_an_estimator_unbiased_for_the_mean_only_still_fails_with_the_evidence(run_spec):
    """E[u] = 1 but E[u²] is not: backward is right for the mean of y = x * u only, as a
    backward that forgets the sample is; a failure, whose note says what the draws showed."""
    report = run(run_spec, "UnbiasedScale")
    found = verdicts(report)
    assert set(found) == set(FIRST_ORDER)
    for result in found.values():
        assert result.status is Status.FAIL, result.message
        assert result.message.startswith("gradient of argument 0 (x) is wrong")  # the sample's
        (note,) = [n for n in result.notes if n.startswith("forward is random")]
        assert MEAN_ONLY in note and "standard errors" in note


def test_its_pathwise_twin_passes_without_being_judged_in_expectation(run_spec):
    # the control: backward is the derivative of the sample, so nothing fails to judge
    found = verdicts(run(run_spec, "PathwiseScale"))
    assert {r.status for r in found.values()} == {Status.PASS}
    assert not any(UNBIASED in r.message for r in found.values())
    # ...while its mean-only twin, the same forward, is judged so
    twin = verdicts(run(run_spec, "UnbiasedScale"))["finite_difference"]
    assert any(MEAN_ONLY in note for note in twin.notes)


def test_a_biased_estimator_still_fails_with_the_evidence(run_spec):
    found = verdicts(run(run_spec, "BiasedScale"))
    for result in found.values():
        assert result.status is Status.FAIL
        assert result.input_name == "x"
        assert result.message.startswith("gradient of argument 0 (x) is wrong at element")
        (note,) = [note for note in result.notes if BIASED in note]
        assert f"over {DRAWS} draws" in note


def test_a_sampler_warns_on_its_unbiased_scale_only(run_spec):
    report = run(run_spec, "TransportSampler", TWO)
    loc, scale = verdicts(report, 0), verdicts(report, 1)
    assert loc["finite_difference"].status is Status.PASS
    for result in scale.values():
        assert result.status is Status.WARN, result.message
        assert result.input_name == "scale"
        assert "backward's gradient of scale is not the derivative of this sample" in result.message
        assert ANY_LOSS in result.message
    assert not any(r.failed for r in report.results)


def test_a_bug_on_the_samplers_loc_fails_beside_the_scale_warning(run_spec):
    report = run(run_spec, "TransportSamplerLocBug", TWO)
    loc, scale = verdicts(report, 0), verdicts(report, 1)
    for result in loc.values():
        assert result.status is Status.FAIL
        assert result.message.startswith("gradient of argument 0 (loc) is wrong")
        assert any(BIASED in note for note in result.notes)
    assert {r.status for r in scale.values()} == {Status.WARN}


def test_a_biased_scale_estimator_still_fails(run_spec):
    scale = verdicts(run(run_spec, "TransportSamplerScaleBug", TWO), 1)
    for result in scale.values():
        assert result.status is Status.FAIL
        assert result.input_name == "scale"
        assert any(BIASED in note for note in result.notes)


def test_a_scale_gradient_right_only_for_the_mean_fails_even_when_declared(run_spec):
    """Twice the pathwise scale gradient: E[z] does not depend on scale, so only a loss of
    the spread (a quadratic one) shows it; a failure, declared approximate or not."""
    for extra in ("", "gradient: approximate"):
        scale = verdicts(run(run_spec, "SamplerScaleTwice", TWO, extra), 1)
        result = scale["finite_difference"]
        assert result.status is Status.FAIL, result.message
        (note,) = [n for n in result.notes if n.startswith("forward is random")]
        assert MEAN_ONLY in note and "eps in a scale's gradient" in note


def test_declared_approximate_passes_an_unbiased_estimator_and_fails_a_biased_one(run_spec):
    extra = "gradient: approximate"
    unbiased = verdicts(run(run_spec, "TransportSampler", TWO, extra), 1)["finite_difference"]
    assert unbiased.status is Status.PASS, unbiased.message
    assert UNBIASED in unbiased.message and ANY_LOSS in unbiased.message
    assert "as `gradient: approximate` says" in unbiased.message
    biased = verdicts(run(run_spec, "TransportSamplerScaleBug", TWO, extra), 1)
    assert biased["finite_difference"].status is Status.FAIL
    assert any(BIASED in note for note in biased["finite_difference"].notes)


def test_a_forward_too_slow_to_average_keeps_its_failure_with_a_note(run_spec, monkeypatch):
    monkeypatch.setattr(random_forward, "BUDGET_SECONDS", 0.0)  # any draw is too slow
    found = verdicts(run(run_spec, "UnbiasedScale"))
    for result in found.values():
        assert result.status is Status.FAIL
        random = [note for note in result.notes if note.startswith("forward is random")]
        assert random == [note for note in random if f"not judged on average over {DRAWS}" in note]
        assert len(random) == 1


def json_check(*arguments: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        app, ["check", *arguments, "--no-isolation", "--no-cache", "--format", "json"]
    )
    return result.exit_code, json.loads(result.stdout)


def first_order(document: dict) -> dict[tuple[str, int], str]:
    return {
        (r["check"], r["input_index"]): r["status"]
        for r in document["results"]
        if r["check"] in FIRST_ORDER
    }


def test_zero_config_through_the_cli(in_repo):
    code, document = json_check("tests.functions.estimators:TransportSampler")
    assert code == ExitCode.OK
    assert first_order(document) == {
        ("finite_difference", 0): "pass",
        ("finite_difference", 1): "warn",
        ("gradcheck", 1): "warn",
    }
    code, document = json_check("tests.functions.estimators:TransportSamplerLocBug")
    assert code == ExitCode.FAILED
    assert first_order(document)[("finite_difference", 0)] == "fail"
    assert first_order(document)[("finite_difference", 1)] == "warn"


def test_a_spec_through_the_cli(in_repo, tmp_path: Path):
    spec = tmp_path / "sampler.yaml"
    spec.write_text(SPEC.format(name="TransportSampler", extra="", inputs=TWO), encoding="utf-8")
    code, document = json_check(str(spec))
    assert code == ExitCode.OK
    assert first_order(document)[("finite_difference", 1)] == "warn"
    spec.write_text(SPEC.format(name="BiasedScale", extra="", inputs=ONE), encoding="utf-8")
    code, document = json_check(str(spec))
    assert code == ExitCode.FAILED
    assert set(first_order(document).values()) == {"fail"}


def test_only_a_forward_that_changes_with_the_seed_is_random():
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert varies_with_seed(estimators.UnbiasedScale.apply, (x,))
    assert not varies_with_seed(correct.Square.apply, (x,))
    state = torch.random.get_rng_state()
    varies_with_seed(estimators.UnbiasedScale.apply, (x,))
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's RNG untouched
