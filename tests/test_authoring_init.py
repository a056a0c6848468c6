"""What `gradverify init` says after trying its starter spec: advice that follows the
diagnosis (never a spec key that would hide a bug the report names), and every warning the
summary counts shown above it. Real Functions, the real CLI."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode

HIDING = ("`kinks:`", "gradient: surrogate", "tolerance")


def init(target: str) -> tuple[int, str, str]:
    """Exit code, the report (up to its summary line) and the advice after it."""
    result = CliRunner().invoke(app, ["init", target, "--no-isolation"])
    report, summary, advice = re.split(
        r"^((?:PASSED|FAILED)  .*)$", result.stdout, maxsplit=1, flags=re.M
    )
    return result.exit_code, report + summary, advice


@pytest.fixture(autouse=True)
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("target", "checks"),
    [
        ("tests.functions.second_order:DetachedBackwardSquare", "gradgradcheck"),
        ("tests.functions.value_bugs:MissingOneOverN", "finite_difference, gradcheck"),
    ],
)
def test_a_diagnosed_bug_is_to_fix_not_to_hide(target, checks):
    code, report, advice = init(target)
    assert code == ExitCode.FAILED
    assert "likely cause" in report  # the diagnosis, above
    assert (
        f"{checks} failed, and the report above names the likely cause: fix backward where "
        "it points." in advice
    )
    assert not [words for words in HIDING if words in advice]


def test_a_diagnosis_that_may_be_on_purpose_says_so():
    # A flipped sign nothing declares (a docstring saying straight-through declares a
    # surrogate, and init then writes gradient: surrogate).
    code, report, advice = init("tests.functions.value_bugs:FlippedSign")
    assert code == ExitCode.FAILED
    assert "on purpose" in report and "gradient-reversal" in report  # the hint, above
    assert "fix backward where it points; if what it names is on purpose, declare it" in advice
    assert "`kinks:`" not in advice and "tolerance" not in advice


def test_an_undiagnosed_failure_names_both_ways_out():
    code, report, advice = init("tests.functions.value_bugs:CubeWithCosineBackward")
    assert code == ExitCode.FAILED
    assert "likely cause" not in report
    assert "finite_difference, gradcheck failed with no diagnosed cause" in advice
    assert all(words in advice for words in HIDING)


@pytest.mark.parametrize(
    ("target", "warnings"),
    [("tests.functions.tutorials:LearnableSwish", 1), ("tests.functions.tutorials:MyReLU", 0)],
)
def test_every_warning_counted_is_shown(target, warnings):
    code, report, advice = init(target)
    assert code == ExitCode.OK
    assert f"{warnings} warning(s)" in report.splitlines()[-1]  # the summary's count ...
    assert len(re.findall(r"^╭─ ! \w+ \(warning\)", report, re.M)) == warnings  # ... shown
    passes = f"passes with {warnings} warning(s), shown above" if warnings else "passes. Now"
    assert passes in advice
