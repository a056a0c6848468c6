"""Explore on by default: within its budget it varies the numbers as well as the tensors, finds
a bug the spec's one draw misses, says what it tried (JSON `explored`, a `-v` line), says so
when its budget runs out (never a failure), and an unchanged suite is still answered from the
cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from tests.explore.json_report import SPECS, check

pytestmark = pytest.mark.usefixtures("in_repo")


def explored_of(report: dict, target_part: str) -> dict:
    [explored] = [
        r["explored"] for r in report["results"] if r["explored"] and target_part in r["target"]
    ]
    return explored


def test_by_default_another_value_of_a_number_finds_the_bug_the_spec_misses():
    code, report = check(str(SPECS / "power_square.yaml"), "--explore", "0")
    assert code == ExitCode.OK  # every draw of x passes with the spec's p = 2
    code, report = check(str(SPECS / "power_square.yaml"))
    assert code == ExitCode.FAILED
    [found] = [r for r in report["results"] if r["status"] == "fail"]
    assert found["check"] == "finite_difference" and found["input_name"] == "x"
    assert "other numbers" in found["message"] and ", p = " in found["message"]
    assert found["explored"]["found"] and not found["explored"]["ran_out"]
    assert found["explored"]["draws"] >= 1
    pasted_p = float(found["details"][4].strip(" -"))  # the snippet's number: not 2
    assert pasted_p != 2.0 and pasted_p > 1


def test_by_default_another_dim_finds_a_backward_right_only_for_the_last_axis(tmp_path: Path):
    spec = tmp_path / "axis.yaml"
    spec.write_text(
        "target: tests.functions.structure_hints:SoftmaxLastDimBackward\n"
        "cases: [{name: last, inputs: [{shape: [3, 4]}, -1]}]\n",
        encoding="utf-8",
    )
    code, _ = check(str(spec), "--explore", "0")
    assert code == ExitCode.OK  # right for the spec's dim = -1
    code, report = check(str(spec))
    assert code == ExitCode.FAILED
    [found] = [r for r in report["results"] if r["status"] == "fail"]
    assert found["check"] == "finite_difference" and "dim = -2" in found["message"]


def test_by_default_a_tensor_value_bug_is_found_too():
    code, report = check(str(SPECS / "cube.yaml"))
    assert code == ExitCode.FAILED
    assert any("found by --explore" in r["message"] for r in report["results"])


def test_a_failure_the_spec_numbers_show_too_is_reported_with_them():
    code, report = check(str(SPECS / "scaled_cube.yaml"), "--explore", "20")
    assert code == ExitCode.FAILED
    [found] = [r for r in report["results"] if r["status"] == "fail"]
    assert "found by --explore" in found["message"]
    assert "other numbers" not in found["message"] and "scale =" not in found["message"]
    assert found["details"][-1].strip() == "- 2.0"  # the pasted case keeps the spec's scale


def test_a_correct_function_passes_and_says_what_was_explored():
    code, report = check(str(SPECS / "correct_numbers.yaml"))
    assert code == ExitCode.OK, [r["message"] for r in report["results"] if r["status"] == "fail"]
    for target in ("Power", "DropoutWhenTraining"):
        explored = explored_of(report, target)
        assert explored["draws"] >= 1 and not explored["found"] and explored["by_default"]
        assert explored["planned"] == 20
        assert explored["ran_out"] == (explored["draws"] < 20)


def test_numbers_that_make_forward_random_are_no_finding():
    """`training` flipped on: forward draws a new mask each call, finite differences see
    noise; the correct dropout passes on every draw asked for."""
    code, report = check(str(SPECS / "correct_numbers.yaml"), "--explore", "12")
    assert code == ExitCode.OK, [r["message"] for r in report["results"] if r["status"] == "fail"]
    explored = explored_of(report, "DropoutWhenTraining")
    assert explored["draws"] == 12 and not explored["by_default"]


def test_the_verbose_report_has_the_explored_line():
    result = CliRunner().invoke(
        app, ["check", "--no-cache", "-v", str(SPECS / "correct_numbers.yaml")]
    )
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines() if "explored" in line]
    assert len(lines) == 2
    assert all(line.startswith("explored ") and line.endswith(", no failure") for line in lines)
    quiet = CliRunner().invoke(app, ["check", "--no-cache", str(SPECS / "correct_numbers.yaml")])
    assert "explored" not in quiet.stdout  # quiet when all is well


def test_a_budget_that_runs_out_says_so_and_is_not_a_failure():
    """The buggy cube with no time to explore: it passes on its own draw, and says its
    search stopped at its budget (the default's running out is no note)."""
    code, report = check(str(SPECS / "cube.yaml"), "--timeout", "0.0001", "--no-isolation")
    assert code == ExitCode.OK
    explored = explored_of(report, "Cube")
    assert explored["ran_out"] and explored["draws"] == 0 and not explored["found"]
    assert explored["budget_seconds"] == 0
    assert not report["notes"]
    result = CliRunner().invoke(
        app, ["check", "--no-cache", "-v", "--timeout", "0.0001", "--no-isolation",
              str(SPECS / "cube.yaml")],
    )  # fmt: skip
    assert "explored 0 draws in its budget of 0 s, no failure" in result.stdout


def test_explore_0_in_the_spec_turns_it_off(tmp_path: Path):
    spec = tmp_path / "off.yaml"
    text = (SPECS / "power_square.yaml").read_text(encoding="utf-8")
    spec.write_text(text.replace("cases:", "explore: 0\ncases:"), encoding="utf-8")
    code, report = check(str(spec))
    assert code == ExitCode.OK
    assert not any(r["explored"] for r in report["results"])


def test_an_unchanged_suite_is_answered_from_the_cache(tmp_path: Path):
    shutil.copy(SPECS / "correct_numbers.yaml", tmp_path / "correct_numbers.yaml")
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        first = runner.invoke(app, ["check", "correct_numbers.yaml", "--format", "json"])
        second = runner.invoke(app, ["check", "correct_numbers.yaml", "--format", "json"])
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    results = json.loads(second.stdout)["results"]
    assert results and all(r["cached"] for r in results)
    assert sum(1 for r in results if r["explored"]) == 2  # what was explored, kept
