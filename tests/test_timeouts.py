"""A case that runs out of time: where it was stuck, under the check that was running, what
it cost so far and what to do. A timeout is not a finding about the Function."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.report import FORMATS, RenderOptions
from gradverify.run import session
from gradverify.spec.load import load_spec_file

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "tests.functions.hostile:LoopsForeverInForward"
SLOW = "tests.functions.slow:SleepsInBackward"


@pytest.fixture(scope="module")
def timeouts_report():
    entries = load_spec_file(ROOT / "tests" / "specs" / "processes" / "timeouts.yaml")
    return session.run(entries, session.RunOptions(cache=False, jobs=2))


def test_a_hang_while_the_inputs_are_prepared_fails_forward_not_lint(timeouts_report, find):
    results = find(timeouts_report, target=HOSTILE)
    failed = [r for r in results if r.failed]
    assert [r.check for r in failed] == ["forward"]
    assert {r.check for r in results if r.status.value == "skip"} >= {"lint", "backward"}
    assert failed[0].message.startswith("timed out after 2 s in forward")
    assert "before its first check" in failed[0].message
    assert "during check lint" not in failed[0].message


def test_a_hang_says_the_line_where_forward_was_stuck(timeouts_report, only):
    result = only(timeouts_report, target=HOSTILE, check="forward")
    loop_line = _line_of(ROOT / "tests" / "functions" / "hostile.py", "time.sleep(0.05)")
    assert result.source_file == str(ROOT / "tests" / "functions" / "hostile.py")
    assert result.source_line == loop_line
    assert f"at tests/functions/hostile.py:{loop_line}" in result.message


def test_a_slow_check_is_reported_under_that_check_with_the_time_spent(timeouts_report, only):
    result = only(timeouts_report, target=SLOW, check="backward")
    assert result.failed
    assert result.message.startswith("timed out after 2 s in backward at tests/functions/slow.py:")
    assert "(during check backward)" in result.message
    (timing,) = result.details
    assert "time so far: lint " in timing and ", forward " in timing
    assert "; backward ran " in timing and "until stopped" in timing


def test_a_timeout_says_what_to_do(timeouts_report, only):
    hint = only(timeouts_report, target=SLOW, check="backward").hint
    assert hint is not None and hint.startswith("no finding: the case ran out of time")
    for remedy in ("`timeout:`", "a smaller shape", "`mode: randomized`", "`checks:`"):
        assert remedy in hint


def test_the_case_time_is_the_time_it_ran(timeouts_report, find):
    for target in (HOSTILE, SLOW):
        assert sum(r.seconds for r in find(timeouts_report, target=target)) >= 2.0


def test_the_text_report_shows_it(timeouts_report):
    text = FORMATS["text"](timeouts_report, RenderOptions(width=140))
    assert "✗ lint" not in text
    assert "✗ forward" in text and "✗ backward" in text
    case_lines = [line for line in text.splitlines() if "case slow" in line or "case stuck" in line]
    assert all("0.00s" not in line for line in case_lines), case_lines


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)
