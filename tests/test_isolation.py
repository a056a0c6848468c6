"""Isolation: a case that kills or hangs its process fails alone; the rest of the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify import session
from gradverify.spec.load import load_spec_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    entries = load_spec_file(ROOT / "tests" / "specs" / "hostile.yaml")
    options = session.RunOptions(cache=False, jobs=2)
    return session.run(entries, options)


def test_a_segfault_in_backward_fails_that_check_and_says_where(hostile_report, only):
    result = only(
        hostile_report, target="tests.functions.hostile:SegfaultInBackward", check="backward"
    )
    assert result.status.value == "fail"
    assert "SIGSEGV" in result.message and "in backward" in result.message
    later = only(
        hostile_report,
        target="tests.functions.hostile:SegfaultInBackward",
        check="finite_difference",
    )
    assert later.status.value == "skip"
    before = only(
        hostile_report, target="tests.functions.hostile:SegfaultInBackward", check="forward"
    )
    assert before.status.value == "pass"  # what ran before the crash is kept


def test_an_infinite_loop_times_out_in_forward(hostile_report, only):
    result = only(
        hostile_report, target="tests.functions.hostile:LoopsForeverInForward", check="forward"
    )
    assert result.status.value == "fail"
    assert "timed out after 2 s in forward" in result.message


def test_os_exit_is_a_failure_with_its_exit_code(hostile_report, only):
    result = only(hostile_report, target="tests.functions.hostile:ExitsInForward", check="forward")
    assert result.status.value == "fail"
    assert "exited with code 7" in result.message


def test_a_correct_function_in_the_same_run_passes(hostile_report, find):
    results = find(hostile_report, target="tests.functions.correct:Square")
    assert [r.status.value for r in results] == ["pass", "pass", "pass"]


def test_the_report_order_is_the_spec_order(hostile_report):
    targets = []
    for result in hostile_report.results:
        if not targets or targets[-1] != result.target:
            targets.append(result.target)
    assert [t.rsplit(":", 1)[1] for t in targets] == [
        "SegfaultInBackward",
        "Square",
        "LoopsForeverInForward",
        "ExitsInForward",
    ]


def test_isolated_and_in_process_runs_agree(in_repo):
    entries = load_spec_file(ROOT / "specs" / "examples.yaml")
    isolated = session.run(entries, session.RunOptions(cache=False, jobs=2))
    in_process = session.run(entries, session.RunOptions(cache=False, isolation=False))

    def plain(report):
        return [(r.target, r.case, r.check, r.status, r.message, r.element) for r in report.results]

    assert plain(isolated) == plain(in_process)


def test_a_target_error_in_a_worker_is_a_user_error(in_repo, tmp_path):
    from gradverify.errors import GradverifyError
    from gradverify.spec.load import parse_spec

    entries = parse_spec("target: tests.functions.correct:Nope\ncases: [{name: a}]\n", "s.yaml")
    with pytest.raises(GradverifyError) as raised:
        session.run(entries, session.RunOptions(cache=False, jobs=1))
    assert "did you mean" in raised.value.render() or "has no attribute" in raised.value.render()
