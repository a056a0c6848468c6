"""Correct Functions pass every check, for several seeds: gradverify raises no false alarms."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.checks import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
CORRECT_SPEC = ROOT / "tests" / "specs" / "checks" / "correct.yaml"
EXAMPLES_SPEC = ROOT / "specs" / "examples.yaml"
SEEDS = range(5)

CORRECT = [
    "tests.functions.correct:Square",
    "tests.functions.correct:Scale",
    "tests.functions.correct:Mul",
    "tests.functions.correct:MatMul",
    "tests.functions.correct:SumDim",
    "tests.functions.correct:TwoOutputs",
    "tests.functions.correct:ArgmaxWithIndex",
    "tests.functions.correct:SetupContextSquare",
    "tests.functions.structural_bugs:ExtraTrailingNone",
    "gradverify.examples.activations:ReLU",
    "gradverify.examples.activations:ClippedReLU",
    "gradverify.examples.linear:Linear",
    "gradverify.examples.linear:FusedLinearReLU",
    "gradverify.examples.swish:Swish",
    "gradverify.examples.logsumexp:LogSumExp",
]


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"seed{seed}")
def reports(request, run_spec):
    return [run_spec(CORRECT_SPEC, seed=request.param), run_spec(EXAMPLES_SPEC, seed=request.param)]


def test_the_specs_cover_every_correct_function(reports):
    targets = {result.target for report in reports for result in report.results}
    assert targets == set(CORRECT)


@pytest.mark.parametrize("target", CORRECT)
def test_every_check_passes_on_every_case(reports, target):
    results = [r for report in reports for r in report.results if r.target == target]
    assert results, f"no results for {target}"
    for case in {r.case for r in results}:
        ran = [r.check for r in results if r.case == case]
        assert set(ran) == set(REGISTRY), f"{target} case {case} ran only {ran}"
    problems = [
        (r.case, r.check, r.status.value, r.message) for r in results if r.status.value != "pass"
    ]
    assert problems == []
