"""`gradient: approximate` with `samples`: a stochastic gradient estimator is judged by the
mean of several backward runs; its run-to-run spread is a figure, not a failure."""

from __future__ import annotations

import jsonschema
import pytest

from gradverify.authoring import spec_schema
from gradverify.errors import SpecError
from gradverify.spec.load import parse_spec

SPEC = """
target: tests.functions.forms:{name}
gradient: approximate
max_error: 0.05
{extra}
cases:
  - name: vector
    inputs: [{{shape: [6]}}]
"""


def run(run_spec, name, extra=""):
    return run_spec(SPEC.format(name=name, extra=extra))


def test_an_unbiased_estimator_passes_on_the_mean_of_its_samples(run_spec, only):
    report = run(run_spec, "NoisySin", "samples: 64")
    result = only(report, check="finite_difference")
    assert result.status.value == "pass", result.message
    assert result.max_rel_error < 0.05
    assert any("the mean of 64 backward runs" in note for note in result.notes)


@pytest.mark.parametrize("seed", [1, 2])  # seeds where one run's projections are off
def test_randomized_mode_projects_the_mean_of_the_samples(run_spec, only, seed):
    report = run_spec(SPEC.format(name="NoisySin", extra="samples: 64\nmode: randomized"), seed)
    result = only(report, check="finite_difference")
    assert result.status.value == "pass", result.message
    assert any("the mean of 64 backward runs" in note for note in result.notes)


def test_its_backward_spread_is_a_figure_not_a_nondeterminism_failure(run_spec, only):
    report = run(run_spec, "NoisySin", "samples: 64")
    result = only(report, check="backward")
    assert result.status.value == "pass"
    assert "two runs differ by up to" in result.message
    assert "deterministic" not in result.message


def test_the_same_estimator_in_exact_mode_is_nondeterministic(run_spec, find):
    report = run_spec(
        """
        target: tests.functions.forms:NoisySin
        checks: [backward]
        cases: [{name: vector, inputs: [{shape: [6]}]}]
        """
    )
    (result,) = find(report, check="backward")
    assert result.status.value == "fail"
    assert "nondeterministic" in result.message
    assert "samples" in result.hint


def test_a_biased_estimator_fails_however_many_samples(run_spec, only):
    report = run(run_spec, "BiasedNoisySin", "samples: 64")
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.max_rel_error == pytest.approx(0.2, abs=0.05)
    assert result.hint is None  # averaging more runs would not help: no pointer to samples


def test_one_sample_of_a_noisy_estimator_fails_and_points_at_samples(run_spec, only):
    report = run(run_spec, "NoisySin")
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert "`samples: " in result.hint
    assert only(report, check="backward").status.value == "pass"


def test_a_deterministic_approximate_gradient_gets_no_samples_hint(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.kinks_and_modes:SlightlyOffSquare
        gradient: approximate
        max_error: 1.0e-4
        checks: [finite_difference]
        cases: [{name: vector, inputs: [{shape: [5], low: 0.5, high: 1.5}]}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "fail"
    assert result.hint is None


def test_samples_belongs_to_approximate_and_is_at_least_one():
    base = "target: a:B\n{keys}\ncases: [{{name: x, inputs: []}}]\n"
    assert parse_spec(base.format(keys="gradient: approximate\nsamples: 16"), "s.yaml")
    with pytest.raises(SpecError) as outside:
        parse_spec(base.format(keys="samples: 16"), "s.yaml")
    assert "`samples` belongs to `gradient: approximate`" in outside.value.render()
    with pytest.raises(SpecError):
        parse_spec(base.format(keys="gradient: approximate\nsamples: 0"), "s.yaml")


def test_the_schema_knows_samples():
    validator = jsonschema.Draft202012Validator(spec_schema())
    base = {"target": "m:F", "gradient": "approximate", "cases": [{"name": "c", "inputs": []}]}
    assert validator.is_valid({**base, "samples": 16})
    assert not validator.is_valid({**base, "samples": 0})
    assert not validator.is_valid({**base, "samples": "many"})


def test_explain_samples_leads_to_the_approximate_mode():
    from typer.testing import CliRunner

    from gradverify.cli import app

    result = CliRunner().invoke(app, ["explain", "samples"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("approximate: ")
    assert "samples: 64" in result.stdout
