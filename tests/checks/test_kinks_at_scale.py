"""Kinks at any count and any size: no false alarm, true counts, a wrong element named at 10⁷."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

from tests.conftest import ROOT, working_directory
from tests.functions import kinks_at_scale

TARGETS = {
    "relu": "tests.functions.kinks_at_scale:MyReLU",
    "clamp": "tests.functions.kinks_at_scale:ClampAtZero",
    "leaky": "tests.functions.kinks_at_scale:LeakyReLU",
}

# (function, size, half-range, dtype, seed): sparse over the grid, each value of each axis
# several times. The first four are the minimal case (seeds 0-3 failed gradgradcheck).
GRID = [
    ("relu", 20_000, 1e-4, "float64", 0),
    ("relu", 20_000, 1e-4, "float64", 1),
    ("relu", 20_000, 1e-4, "float32", 2),
    ("relu", 20_000, 1e-4, "float16", 3),
    ("relu", 2_000, 1e-5, "float64", 4),
    ("relu", 50_000, 1e-5, "float32", 5),
    ("relu", 50_000, 1e-3, "bfloat16", 6),
    ("relu", 5_000, 1e-3, "float16", 7),
    ("relu", 10_000, 1e-5, "bfloat16", 8),
    ("relu", 50_000, 1e-4, "float64", 9),
    ("clamp", 2_000, 1e-4, "float64", 0),
    ("clamp", 20_000, 1e-5, "float64", 1),
    ("clamp", 50_000, 1e-4, "float32", 2),
    ("clamp", 10_000, 1e-3, "float16", 3),
    ("clamp", 20_000, 1e-4, "bfloat16", 4),
    ("clamp", 5_000, 1e-5, "float32", 5),
    ("clamp", 50_000, 1e-5, "float16", 6),
    ("clamp", 20_000, 1e-3, "float64", 7),
    ("clamp", 10_000, 1e-4, "bfloat16", 8),
    ("clamp", 2_000, 1e-3, "float32", 9),
    ("leaky", 20_000, 1e-4, "float64", 0),
    ("leaky", 50_000, 1e-5, "float64", 1),
    ("leaky", 2_000, 1e-5, "float32", 2),
    ("leaky", 10_000, 1e-4, "float16", 3),
    ("leaky", 20_000, 1e-3, "bfloat16", 4),
    ("leaky", 50_000, 1e-4, "float32", 5),
    ("leaky", 5_000, 1e-3, "float64", 6),
    ("leaky", 20_000, 1e-5, "float16", 7),
    ("leaky", 10_000, 1e-5, "bfloat16", 8),
    ("leaky", 50_000, 1e-3, "float32", 9),
]


@pytest.mark.parametrize(("function", "size", "half", "dtype", "seed"), GRID)
def test_many_inputs_near_a_kink_raise_no_false_alarm(run_spec, function, size, half, dtype, seed):
    report = run_spec(
        f"""
        target: {TARGETS[function]}
        checks: [finite_difference, gradcheck, gradgradcheck]
        cases:
          - name: near
            inputs: [{{shape: [{size}], low: {-half}, high: {half}, dtype: {dtype}}}]
        """,
        seed=seed,
    )
    failed = [f"{r.check}: {r.message}" for r in report.results if r.failed]
    assert failed == []


def test_elements_a_re_draw_cannot_clear_are_all_held_fixed(run_spec, find):
    # A range of ±2 eps: every try leaves hundreds within eps of the kink, far more than any
    # budget of searches; gradgradcheck passes with all of them held fixed.
    report = run_spec(
        """
        target: tests.functions.kinks_at_scale:MyReLU
        checks: [finite_difference, gradcheck, gradgradcheck]
        cases:
          - name: tiny
            inputs: [{shape: [20000], low: -2.0e-6, high: 2.0e-6}]
        """
    )
    assert not any(r.failed for r in report.results)
    (gradgradcheck,) = find(report, check="gradgradcheck")
    assert any("held fixed" in note for note in gradgradcheck.notes)
    (finite_difference,) = find(report, check="finite_difference")
    assert finite_difference.status.value == "warn"
    assert "more element(s)" in finite_difference.message


def _settle(low: float, high: float, size: int, seed: int = 0):
    from gradverify.engine.case import Job
    from gradverify.engine.off_kinks import settle_inputs
    from gradverify.inputs import build_inputs
    from gradverify.spec.load import parse_spec
    from gradverify.target.loading import load_target

    text = (
        "target: tests.functions.kinks_at_scale:MyReLU\n"
        f"cases: [{{name: c, inputs: [{{shape: [{size}], low: {low}, high: {high}}}]}}]\n"
    )
    (entry,) = parse_spec(text, "spec.yaml")
    job = Job(entry, load_target(entry.spec.target or ""))
    case = job.entry.spec.cases[0]
    drawn = build_inputs(case, seed)
    settled, notes = settle_inputs(job.target, case, drawn, job.entry.spec, seed)
    return drawn[0].detach(), settled[0].detach(), notes


def _counts(note: str) -> list[int]:
    """(re-drawn, tries, still near) as the note states them (still: 0 when not said)."""
    redrawn = re.search(r"re-drew (\d+) element", note)
    tries = re.search(r"\((\d+) tr(?:y|ies)\)", note)
    still = re.search(r"(\d+) element\(s\) still within eps", note)
    assert redrawn and tries, note
    return [int(redrawn[1]), int(tries[1]), int(still[1]) if still else 0]


def test_notes_count_every_element_re_drawn_and_every_one_still_near():
    drawn, settled, (note,) = _settle(-2.0e-6, 2.0e-6, 20_000)
    redrawn, tries, still = _counts(note)[:3]
    assert redrawn == int((drawn != settled).sum())
    assert tries == 5
    eps = 1e-6
    # The kink at 0 is found when it lies within [x - eps, x + eps], up to the sampling's
    # resolution at the very ends of that window.
    assert int((settled.abs() < 0.9 * eps).sum()) <= still <= int((settled.abs() <= eps).sum())
    assert still > 100  # far more than the old budgets could hold


def test_a_wide_range_is_cleared_of_kinks_and_says_how_many_it_moved():
    drawn, settled, (note,) = _settle(-1.0e-4, 1.0e-4, 20_000)
    assert _counts(note)[0] == int((drawn != settled).sum()) > 100
    assert "still" not in note
    assert int((settled.abs() < 1e-6).sum()) == 0


def test_forward_runs_once_per_case_to_size_the_outputs():
    from gradverify.checks.shared.case import CaseContext
    from gradverify.checks.shared.modes import resolve_mode
    from gradverify.engine.case import Job
    from gradverify.spec.load import parse_spec
    from gradverify.target.loading import load_target
    from tests.functions import large

    text = "target: tests.functions.large:Sigmoid\ncases: [{name: c, inputs: [{shape: [2000]}]}]\n"
    (entry,) = parse_spec(text, "spec.yaml")
    job = Job(entry, load_target(entry.spec.target or ""))
    arguments = (torch.rand(2000, dtype=torch.float64, requires_grad=True),)
    context = CaseContext(job.target, "c", arguments, job.entry.spec, seed=0)
    large.reset_forward_calls()
    for _ in range(3):  # finite_difference, gradcheck and gradgradcheck each ask
        assert resolve_mode(context, arguments)[0] == "randomized"
    assert large.FORWARD_CALLS["count"] == 1


def _check_isolated(target: str, checks: str) -> list[Any]:
    """The default run, as the command makes it: a worker forked from the fork server (under
    its default time limit, with its allocator), no cache."""
    from gradverify.run import session
    from gradverify.spec.load import parse_spec

    text = (
        f"target: {target}\nchecks: {checks}\n"
        "cases: [{name: big, inputs: [{shape: [10000000]}]}]\n"
    )
    with working_directory(ROOT):
        report = session.run(parse_spec(text, "spec.yaml"), session.RunOptions(cache=False, jobs=1))
    return list(report.results)


def test_a_correct_clamp_of_ten_million_elements_passes_within_the_default_timeout():
    results = _check_isolated(
        "tests.functions.kinks_at_scale:Clamp",
        "[forward, backward, layouts, finite_difference, gradcheck, gradgradcheck]",
    )
    statuses = {r.check: r.status.value for r in results}
    assert statuses == dict.fromkeys(statuses, "pass"), results
    assert len(statuses) == 6


def test_one_wrong_element_among_ten_million_is_named_at_its_index():
    (result,) = _check_isolated(
        "tests.functions.kinks_at_scale:ClampWrongAtOneElement", "[finite_difference]"
    )
    assert result.status.value == "fail"
    assert result.element == (kinks_at_scale.WRONG_INDEX,)
    assert result.analytical == 2.0
    assert result.numerical == pytest.approx(1.0)
