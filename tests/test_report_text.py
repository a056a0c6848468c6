"""The text report for people: which argument, where, the likely cause, and no stray escapes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.report import FORMATS, RenderOptions, text
from gradverify.results import Report, Result, Status

ROOT = Path(__file__).resolve().parents[1]
BUGGY_SPEC = str(ROOT / "specs" / "buggy.yaml")
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(autouse=True)
def no_color_overrides(monkeypatch):
    # The environment the tests run in must not decide whether color is used.
    for variable in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(scope="module")
def buggy_text(buggy_report):
    return text.render(buggy_report, RenderOptions(color=False, width=100))


def test_every_format_choice_has_a_renderer():
    from gradverify.cli import OutputFormat

    assert {choice.value for choice in OutputFormat} == set(FORMATS)


def test_the_failing_argument_is_named_with_its_position(buggy_text):
    assert "argument 1 (beta)" in buggy_text
    assert "argument 1 (weight)" in buggy_text


def test_the_likely_cause_is_shown(buggy_text):
    assert "likely cause" in buggy_text
    assert "wrong only where x > 1" in buggy_text
    assert "is transposed" in buggy_text


def test_the_evidence_is_shown(buggy_report, buggy_text):
    failure = next(r for r in buggy_report.results if r.failed and r.element)
    assert f"{failure.analytical:.8g}" in buggy_text
    assert f"{failure.numerical:.8g}" in buggy_text
    assert str(list(failure.element)) in buggy_text


def test_cases_are_headed_by_target_case_and_spec_location(buggy_text):
    assert "gradverify.examples.buggy:SwishWrongBeta  case scalar_beta" in buggy_text
    assert re.search(r"buggy\.yaml:\d+", buggy_text)


def test_gradcheck_confirming_finite_differences_is_said_once(buggy_text):
    assert "gradcheck: the same finding as above" in buggy_text


def test_the_summary_line_counts(buggy_report, buggy_text):
    summary = buggy_report.summary
    assert (
        f"FAILED  3 target(s), 3 case(s), {summary.results} result(s): {summary.passed} passed, "
        f"{summary.failed} failed" in buggy_text
    )


def test_quiet_leaves_out_passing_cases_and_checks():
    report = Report(
        results=(
            Result("m:Good", "c", "forward", Status.PASS, "all fine"),
            Result("m:Bad", "c", "forward", Status.PASS, "also fine"),
            Result("m:Bad", "c", "backward", Status.FAIL, "broken here"),
        )
    )
    quiet = text.render(report, RenderOptions(quiet=True))
    assert "m:Good" not in quiet
    assert "also fine" not in quiet
    assert "broken here" in quiet
    assert "2 passed, 1 failed" in quiet  # the summary still counts everything
    loud = text.render(report, RenderOptions())
    assert "m:Good" in loud and "also fine" in loud


def test_run_notes_come_first():
    report = Report(results=(Result("m:F", "c", "forward", Status.PASS),), notes=("inferred!",))
    assert text.render(report, RenderOptions()).lstrip().startswith("inferred!")


def test_color_only_when_asked(buggy_report):
    assert ANSI.search(text.render(buggy_report, RenderOptions(color=True)))
    assert not ANSI.search(text.render(buggy_report, RenderOptions(color=False)))


def test_no_escape_codes_when_stdout_is_not_a_terminal():
    result = CliRunner().invoke(app, ["check", BUGGY_SPEC])
    assert result.exit_code == 1
    assert "argument 1 (beta)" in result.stdout
    assert not ANSI.search(result.output)


@pytest.fixture
def terminal(monkeypatch):
    """Make rich believe stdout is a terminal, as it is for a person at a shell."""
    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))


def test_a_terminal_gets_color(terminal):
    result = CliRunner().invoke(app, ["check", BUGGY_SPEC])
    assert ANSI.search(result.stdout)


def test_no_color_is_respected_even_on_a_terminal(terminal, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    result = CliRunner().invoke(app, ["check", BUGGY_SPEC])
    assert result.exit_code == 1
    assert "likely cause" in result.stdout
    assert not ANSI.search(result.output)
