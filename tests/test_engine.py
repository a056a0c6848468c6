"""The engine: every check of every case, in order, deterministic, and kind to the caller."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gradverify.run import session

ROOT = Path(__file__).resolve().parents[1]
BUGS_SPEC = ROOT / "tests" / "specs" / "bugs.yaml"
CRASH_SPEC = ROOT / "tests" / "specs" / "checks" / "crash.yaml"

FLIPPED_SIGN = """
    target: tests.functions.value_bugs:FlippedSign
    checks: [finite_difference]
    seed: SEED
    cases: [{name: vector, inputs: [{shape: [5]}]}]
    """


def without_timing(report):
    """Results as comparable text (NaN != NaN, but "NaN" == "NaN"), timing left out (how many
    draws exploring fits in its time budget too)."""
    return [
        json.dumps({**result.to_dict(), "seconds": 0, "explored": result.explored is not None})
        for result in report.results
    ]


def test_results_follow_the_spec_order_and_checks_their_fixed_order(run_spec):
    report = run_spec(
        """
        functions:
          - target: tests.functions.correct:Mul
            checks: [gradcheck, forward]
            cases:
              - {name: second, inputs: [{shape: [2]}, {shape: [2]}]}
              - {name: first, inputs: [{shape: [2]}, {shape: [2]}]}
          - target: tests.functions.correct:Square
            checks: [backward]
            cases: [{name: only, inputs: [{shape: [2]}]}]
        """
    )
    assert [(r.target.rsplit(":")[-1], r.case, r.check) for r in report.results] == [
        # Checks always run in their fixed order (later ones read earlier verdicts).
        ("Mul", "second", "forward"),
        ("Mul", "second", "gradcheck"),
        ("Mul", "first", "forward"),
        ("Mul", "first", "gradcheck"),
        ("Square", "only", "backward"),
    ]
    assert all(r.seconds >= 0 for r in report.results)


def test_results_know_where_their_case_is_written(run_spec):
    report = run_spec(CRASH_SPEC)
    lines = {(r.target, r.spec_line) for r in report.results}
    text = CRASH_SPEC.read_text().splitlines()
    for target, line in lines:
        assert "{name: vector" in text[line - 1], (target, line)
    assert {r.spec_file for r in report.results} == {str(CRASH_SPEC)}


def test_a_crash_in_user_code_fails_one_target_and_the_run_goes_on(run_spec, find):
    report = run_spec(CRASH_SPEC)
    assert [r.target for r in report.results[::5]] == [
        "tests.functions.mapping:ForwardRaises",
        "tests.functions.mapping:BackwardRaises",
        "tests.functions.correct:Square",
    ]
    assert not report.passed
    assert find(
        report, target="tests.functions.mapping:ForwardRaises", check="forward", status="fail"
    )
    assert all(
        r.status.value == "pass" for r in find(report, target="tests.functions.correct:Square")
    )


def test_the_same_spec_twice_gives_the_same_results(run_spec, bugs_report):
    # bugs.yaml includes a backward that draws random numbers from torch's global RNG.
    again = run_spec(BUGS_SPEC)
    assert without_timing(again) == without_timing(bugs_report)


def test_a_seed_override_changes_the_inputs(run_spec, only):
    spec_zero = FLIPPED_SIGN.replace("SEED", "0")
    first = only(run_spec(spec_zero), check="finite_difference")
    overridden = only(run_spec(spec_zero, seed=1), check="finite_difference")
    assert first.status.value == overridden.status.value == "fail"
    assert first.analytical != overridden.analytical
    # The override is the same as writing that seed in the spec.
    written = only(run_spec(FLIPPED_SIGN.replace("SEED", "1")), check="finite_difference")
    assert replace(written, seconds=0, spec_file=None) == replace(
        overridden, seconds=0, spec_file=None
    )


def test_the_callers_global_rng_state_is_untouched(run_spec):
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    run_spec(
        """
        functions:
          - target: tests.functions.structural_bugs:NondeterministicBackward
            cases: [{name: vector, inputs: [{shape: [4]}]}]
          - target: tests.functions.correct:Square
            cases: [{name: vector, inputs: [{shape: [4]}]}]
        """
    )
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_cuda_case_is_skipped_without_cuda(run_spec, find):
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [forward, backward, finite_difference, gradcheck, gradgradcheck]
        cases:
          - {name: gpu, inputs: [{shape: [4], device: cuda}]}
          - {name: cpu, inputs: [{shape: [4]}]}
        """
    )
    gpu = find(report, case="gpu")
    assert [r.check for r in gpu] == [
        "forward",
        "backward",
        "finite_difference",
        "gradcheck",
        "gradgradcheck",
    ]
    assert all(r.status.value == "skip" for r in gpu)
    assert all("cuda" in r.message and "not available" in r.message for r in gpu)
    assert all(r.status.value == "pass" for r in find(report, case="cpu"))
    assert report.passed
    assert report.summary.skipped == 5


def test_run_level_notes_are_kept(in_repo):
    report = session.run([], session.RunOptions(isolation=False), notes=["inputs inferred"])
    assert report.notes == ("inputs inferred",)
    assert report.results == ()
    assert report.passed
