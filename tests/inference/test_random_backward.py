"""A backward that draws random numbers of its own is inferred a stochastic estimator
(`gradient: approximate` with `samples` and `max_error`, gradverify.inference.random_backward):
a correct one passes zero-config, a biased one fails where its bias is, and a deterministic
backward is never inferred approximate."""

from __future__ import annotations

import pytest
import torch

from gradverify.inference.spec_text import spec_text
from gradverify.inference.zeroconfig import infer_entry
from gradverify.results import Status
from gradverify.spec.load import parse_spec
from gradverify.target.loading import load_target
from tests.inference.runs import failed_checks, inferred, zero_config

ESTIMATORS = "tests.functions.estimators"


@pytest.mark.parametrize("name", ["SparsifiedSin", "SparsifiedSampler"])
def test_an_unbiased_sparsified_backward_passes_zero_config(name):
    target = f"{ESTIMATORS}:{name}"
    entry, note = infer_entry(load_target(target))
    assert entry.spec.gradient == "approximate"
    assert entry.spec.backward_samples > 1
    assert "backward draws random numbers: checked as a stochastic estimator" in note
    report = zero_config(target)
    assert not failed_checks(report)
    backward = [r for r in report.results if r.check == "backward"]
    assert backward and all(r.status is Status.PASS for r in backward)
    assert all("(stochastic)" in r.message for r in backward)


@pytest.mark.parametrize("name", ["SparsifiedSinUnscaled", "SparsifiedSamplerUnscaled"])
def test_a_mask_not_rescaled_fails_on_its_bias(name):
    report = zero_config(f"{ESTIMATORS}:{name}")
    assert failed_checks(report) == {"finite_difference"}  # not the run-to-run spread
    failures = [r for r in report.results if r.status is Status.FAIL]
    assert {r.input_index for r in failures} == {0}  # x, or loc: half its gradient
    assert all("above max_error" in r.message for r in failures)
    assert all(r.max_rel_error is not None and r.max_rel_error > 0.3 for r in failures)


@pytest.mark.parametrize(
    "target",
    [
        f"{ESTIMATORS}:PathwiseScale",  # a random forward, a deterministic backward
        f"{ESTIMATORS}:DriftingSin",  # apart run to run, whatever the seed: not an estimator
        "tests.functions.correct:Square",
    ],
)
def test_a_backward_that_draws_nothing_is_never_inferred_approximate(target):
    inference = inferred(target)
    assert inference.random_backward is None
    assert inference.spec().gradient == "exact"


def test_a_backward_apart_whatever_the_seed_still_fails_as_nondeterministic():
    target = f"{ESTIMATORS}:DriftingSin"
    assert inferred(target).random_backward is None
    report = zero_config(target)
    backward = [r for r in report.results if r.check == "backward"]
    assert backward and all(r.status is Status.FAIL for r in backward)
    assert all("nondeterministic" in r.message for r in backward)


def test_init_writes_the_estimator_keys_with_a_comment_and_they_load():
    inference = inferred(f"{ESTIMATORS}:SparsifiedSin")
    text = spec_text(inference)
    assert "gradient: approximate   # backward draws random numbers" in text
    (entry,) = parse_spec(text, "sparsified_sin.yaml")
    assert entry.spec.gradient == "approximate"
    assert entry.spec.backward_samples == inference.random_backward.samples
    assert entry.spec.allowed_error == inference.random_backward.max_error


def test_measuring_the_spread_leaves_the_users_rng_as_it_was():
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    assert inferred(f"{ESTIMATORS}:SparsifiedSin").random_backward is not None
    assert torch.equal(torch.get_rng_state(), before)
