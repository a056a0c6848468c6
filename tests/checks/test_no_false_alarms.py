"""Correct Functions never fail, for 20 seeds: gradverify raises no false alarms.

Warnings are allowed where the Function is correct but deserves a remark: at a kink (a valid
subgradient where central differences mean nothing), and for wasted work (a gradient computed
although ctx.needs_input_grad says it is not needed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = [
    ROOT / "tests" / "specs" / "checks" / "correct.yaml",
    ROOT / "specs" / "examples.yaml",
    ROOT / "specs" / "surrogates.yaml",
    ROOT / "specs" / "reference.yaml",
]
SEEDS = range(20)
ALLOWED_WARNINGS = ("non-differentiable", "needs_input_grad")

CORRECT = {
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
    "gradverify.examples.surrogates:ClampWithGrad",
    "gradverify.examples.surrogates:ReplaceGrad",
    "gradverify.examples.surrogates:StraightThroughSign",
    "gradverify.examples.fused:FusedBiasGelu",
}


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"seed{seed}")
def results(request, run_spec):
    return [r for spec in SPECS for r in run_spec(spec, seed=request.param).results]


def test_the_specs_cover_every_correct_function(results):
    assert {result.target for result in results} == CORRECT


def test_nothing_fails(results):
    failures = [(r.target, r.case, r.check, r.message) for r in results if r.status.value == "fail"]
    assert failures == []


def test_warnings_are_only_the_allowed_kinds(results):
    unexpected = [
        (r.target, r.case, r.check, r.message)
        for r in results
        if r.status.value == "warn" and not any(kind in r.message for kind in ALLOWED_WARNINGS)
    ]
    assert unexpected == []


def test_every_selected_check_reports(results):
    from gradverify.spec.load import load_spec_file

    for spec in SPECS:
        for entry in load_spec_file(spec):
            for case in entry.spec.cases:
                ran = {
                    r.check
                    for r in results
                    if r.target == entry.spec.target and r.case == case.name
                }
                assert ran == set(entry.spec.checks_for(custom_op=False)), (
                    entry.spec.target,
                    case.name,
                )
