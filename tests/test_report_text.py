"""The text report for people: which argument, where, the likely cause, and no stray escapes."""

from __future__ import annotations

import re
from dataclasses import replace
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


def test_a_scalar_arguments_element_is_said_in_words(buggy_report, buggy_text):
    beta = next(r for r in buggy_report.results if r.failed and r.input_name == "beta")
    assert beta.element == ()  # the data keeps the 0-d index
    assert "argument 1 (beta) is wrong at its only element, output 0 element [1]" in buggy_text
    assert "[]" not in buggy_text


def test_cases_are_headed_by_target_case_and_spec_location(buggy_text):
    assert "gradverify.examples.buggy:SwishWrongBeta  case scalar_beta" in buggy_text
    assert re.search(r"buggy\.yaml:\d+", buggy_text)


def test_gradcheck_confirming_finite_differences_is_said_once(buggy_text):
    assert buggy_text.count("gradcheck: the same finding as finite_difference") == 3
    assert "╭─ ✗ gradcheck" not in buggy_text  # no panel of its own


def test_the_summary_line_counts(buggy_report, buggy_text):
    summary = buggy_report.summary
    repeating = [r for r in buggy_report.results if r.failed and r.same_as]
    assert len(repeating) == 3  # gradcheck confirming finite_difference, in each case
    said = " ".join(buggy_text.split("\n\n")[-1].split())
    assert (
        f"FAILED 3 target(s), 3 case(s), {summary.results} result(s): {summary.passed} passed, "
        f"{summary.failed - 3} failed (+3 repeats)" in said
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
    default = text.render(report, RenderOptions())
    assert "m:Good" in default and "also fine" not in default  # a passing check is counted
    verbose = text.render(report, RenderOptions(verbose=True))
    assert "also fine" in verbose


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


# The default report: one line per passing case, details only for findings.

PASSING_SPEC = """
functions:
  - target: tests.functions.correct:Square
    cases:
      - {name: vector, inputs: [{shape: [5]}]}
      - {name: matrix, inputs: [{shape: [2, 3]}]}
  - target: tests.functions.correct:SumDim
    cases: [{name: rows, inputs: [{shape: [3, 4]}, 1]}]
  - target: gradverify.examples.activations:ReLU
    cases: [{name: vector, inputs: [{shape: [8], low: -2.0, high: 2.0}]}]
  - target: gradverify.examples.logsumexp:LogSumExp
    cases: [{name: rows, inputs: [{shape: [3, 4]}, 1]}]
"""
CRASH_SPEC = """
target: tests.functions.mapping:BackwardRaises
cases: [{name: vector, inputs: [{shape: [4]}]}]
"""
NON_FINITE_SPEC = """
target: tests.functions.report:LogOfZero
cases: [{name: vector, inputs: [{shape: [4], low: 0.5, high: 2.0}]}]
"""
WASTED_SPEC = """
target: tests.functions.layouts:IgnoresNeedsInputGrad
cases: [{name: matrices, inputs: [{shape: [3, 4]}, {shape: [3, 4]}]}]
"""
CASE_LINE = re.compile(r"^✓ \S+  case \S+  \d+ passed  \d+\.\d\ds$")


@pytest.fixture(scope="module")
def passing_report(run_spec):
    report = run_spec(PASSING_SPEC)
    assert report.passed and not any(r.status is Status.WARN for r in report.results)
    return report


def panels(rendered: str) -> list[str]:
    return [line for line in rendered.splitlines() if line.startswith("╭─")]


def test_a_passing_suite_prints_one_line_per_case_and_the_summary(passing_report):
    lines = text.render(passing_report, RenderOptions()).splitlines()
    assert len(lines) == passing_report.summary.cases + 1 == 6
    assert all(CASE_LINE.match(line) for line in lines[:-1]), lines
    assert lines[-1].startswith("PASSED")


def test_checks_that_do_not_apply_print_nothing_but_are_counted(passing_report):
    rendered = text.render(passing_report, RenderOptions())
    assert "jvp" not in rendered and "vmap" not in rendered
    not_applicable = [r for r in passing_report.results if not r.applies]
    assert len(not_applicable) == 20  # jvp, vmap, func and opcheck, for each of five cases
    assert f", {len(not_applicable)} not applicable," in rendered
    assert "skipped" not in rendered  # none of them counts as a skip


def test_a_passing_case_with_a_skip_stays_one_line_and_verbose_says_why():
    results = (
        Result("m:F", "c", "forward", Status.PASS, seconds=0.25),
        Result("m:F", "c", "finite_difference", Status.SKIP, "complex values: not compared"),
    )
    lines = text.render(Report(results), RenderOptions()).splitlines()
    assert lines[0] == "✓ m:F  case c  1 passed, 1 skipped  0.25s"
    summary = " ".join(line.strip() for line in lines[1:])  # the summary may wrap
    assert summary.startswith("PASSED") and "1 skipped (-v says why)" in summary
    verbose = text.render(Report(results), RenderOptions(verbose=True))
    assert "complex values: not compared" in verbose
    assert "-v says why" not in verbose


def test_a_case_with_a_finding_shows_its_skips_too():
    results = (
        Result("m:F", "c", "forward", Status.FAIL, "forward returned NaN"),
        Result("m:F", "c", "finite_difference", Status.SKIP, "complex values: not compared"),
    )
    rendered = text.render(Report(results), RenderOptions())
    assert "finite_difference skipped: complex values: not compared" in rendered


def test_verbose_shows_every_check(passing_report):
    rendered = text.render(passing_report, RenderOptions(verbose=True))
    rows = [line for line in rendered.splitlines() if line.startswith((" ✓ ", " - "))]
    assert len(rows) == len(passing_report.results)
    assert "the Function defines no jvp" in rendered


def test_quiet_shows_only_failures(buggy_report):
    rendered = text.render(buggy_report, RenderOptions(quiet=True))
    assert "wasted work" not in rendered  # warnings are counted, not shown
    assert "1 warning" in rendered
    assert {line.split(" · ")[0] for line in panels(rendered)} == {"╭─ ✗ finite_difference"}
    assert not any(line.startswith("✓") for line in rendered.splitlines())
    assert rendered.rstrip().split("\n\n")[-1].startswith("FAILED")  # the summary, last


def test_a_case_line_sums_its_checks_times_and_says_cached():
    results = (
        Result("m:F", "c", "forward", Status.PASS, seconds=0.25),
        Result("m:F", "c", "backward", Status.PASS, seconds=0.5),
    )
    assert "✓ m:F  case c  2 passed  0.75s" in text.render(Report(results), RenderOptions())
    cached = tuple(replace(r, cached=True) for r in results)
    assert "✓ m:F  case c  2 passed  (cached)" in text.render(Report(cached), RenderOptions())


def test_a_backward_crash_is_told_once(run_spec):
    rendered = text.render(run_spec(CRASH_SPEC), RenderOptions())
    (panel,) = panels(rendered)
    assert panel.startswith("╭─ ✗ backward")
    outside = [line for line in rendered.splitlines() if not line.startswith(("│", "╭", "╰"))]
    assert not any("exploded on purpose" in line for line in outside)
    stopped = [line for line in outside if "not run" in line]
    assert stopped == [
        "  layouts, finite_difference, gradcheck, gradgradcheck: not run (backward failed above)"
    ]


def test_one_non_finite_output_is_one_expanded_finding(run_spec):
    rendered = text.render(run_spec(NON_FINITE_SPEC), RenderOptions())
    (panel,) = panels(rendered)
    assert panel.startswith("╭─ ✗ forward · output 0")
    assert (
        "  backward, finite_difference, gradcheck, gradgradcheck: the same finding as forward"
        in rendered.splitlines()
    )


def test_wasted_work_is_one_warning_naming_both_arguments(run_spec):
    rendered = text.render(run_spec(WASTED_SPEC), RenderOptions())
    (panel,) = panels(rendered)
    assert panel.startswith("╭─ ! layouts (warning)")
    assert "argument 0 (x) and argument 1 (w)" in " ".join(rendered.split())


def test_no_word_is_ever_cut(buggy_report):
    long = "the gradient is wrong " + "because of a reason " * 15 + "at the very end"
    report = Report((*buggy_report.results, Result("m:F", "c", "forward", Status.FAIL, long)))
    for options in (RenderOptions(), RenderOptions(quiet=True), RenderOptions(verbose=True)):
        rendered = text.render(report, options)
        assert "…" not in rendered
        assert "at the very end" in rendered
        assert "ctx.needs_input_grad" in rendered or options.quiet


def test_plain_text_has_no_trailing_blanks(buggy_text):
    assert all(line == line.rstrip() for line in buggy_text.splitlines())
