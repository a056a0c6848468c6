"""--explore N: the real CLI finds an input-dependent bug the case's own draw misses, shrinks
it to a case that fails when pasted into a spec, and never fails a correct kinked Function."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from tests.explore.json_report import SPECS, check

pytestmark = pytest.mark.usefixtures("in_repo")


def explored(report: dict) -> list[dict]:
    return [r for r in report["results"] if "found by --explore" in r["message"]]


def test_the_case_own_draw_misses_the_bug():
    code, report = check(str(SPECS / "cube.yaml"), "--explore", "0")
    assert code == ExitCode.OK, report
    assert not explored(report)


def test_explore_finds_the_bug_and_shrinks_it_to_one_element():
    code, report = check(str(SPECS / "cube.yaml"), "--explore", "20")
    assert code == ExitCode.FAILED
    [found] = explored(report)
    assert found["check"] == "finite_difference"
    assert found["status"] == "fail"
    assert found["input_name"] == "x"
    assert found["element"] == [0]
    assert "shrunk to x [1] = [" in found["message"]
    assert found["analytical"] != pytest.approx(found["numerical"])
    # the argument's pass on the case's own draw gives way to the failure
    statuses = [r["status"] for r in report["results"] if r["check"] == "finite_difference"]
    assert statuses == ["fail"]


def test_the_shrunk_case_fails_when_pasted_into_the_spec(tmp_path: Path):
    _, report = check(str(SPECS / "cube.yaml"), "--explore", "20")
    [found] = explored(report)
    snippet = found["details"][1:]
    assert snippet[0] == "- name: small-explored"
    value = json.loads(snippet[2].split("values: ")[1].rstrip("}"))
    assert len(value) == 1 and -3 <= value[0] < -2  # the smallest shape, a value where it fails
    pasted = (SPECS / "cube.yaml").read_text(encoding="utf-8") + "\n".join(
        "  " + line for line in snippet
    )
    spec = tmp_path / "pasted.yaml"
    spec.write_text(pasted + "\n", encoding="utf-8")
    code, report = check(str(spec), "--explore", "0")  # the pasted case fails on its own
    assert code == ExitCode.FAILED
    failed = {(r["case"], r["check"]) for r in report["results"] if r["status"] == "fail"}
    assert ("small-explored", "finite_difference") in failed
    assert not any(case == "small" for case, _ in failed)


def test_shrinking_keeps_inputs_that_must_agree_in_shape():
    code, report = check(str(SPECS / "grid.yaml"), "--explore", "0")
    assert code == ExitCode.OK
    code, report = check(str(SPECS / "grid.yaml"), "--explore", "10")
    assert code == ExitCode.FAILED
    [found] = explored(report)
    assert found["input_name"] == "w"
    assert "x [1, 1]" in found["message"] and "w [1, 1]" in found["message"]


def test_correct_kinked_functions_pass_under_explore():
    code, report = check(str(SPECS / "kinked.yaml"), "--explore", "50")
    assert code == ExitCode.OK, [r["message"] for r in report["results"] if r["status"] == "fail"]
    assert report["summary"]["cases"] == 4


def test_the_spec_key_turns_it_on_and_the_flag_overrides_it():
    code, report = check(str(SPECS / "cube_explore_key.yaml"))
    assert code == ExitCode.FAILED
    assert explored(report)
    code, _ = check(str(SPECS / "cube_explore_key.yaml"), "--explore", "0")
    assert code == ExitCode.OK


def test_a_budget_that_runs_out_is_a_note_not_a_failure():
    code, report = check(
        str(SPECS / "cube.yaml"), "--explore", "20", "--timeout", "0.0001", "--no-isolation"
    )
    assert code == ExitCode.OK
    assert any("0 of 20 further draws tried before its time budget" in n for n in report["notes"])


# The configuration, and the cache, in a project of their own: the command run from its
# directory (in this process, sharing its fork server).


@dataclass
class Completed:
    returncode: int
    stdout: str


def gradverify(project: Path, *arguments: str) -> Completed:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        patch.setenv("NO_COLOR", "1")
        result = CliRunner().invoke(app, ["check", *arguments])
    return Completed(result.exit_code, result.stdout)


def test_the_configuration_key_turns_it_off_and_on(tmp_path: Path):
    shutil.copy(SPECS / "cube.yaml", tmp_path / "cube.yaml")
    (tmp_path / "pyproject.toml").write_text("[tool.gradverify]\nexplore = 0\n")
    assert gradverify(tmp_path, "cube.yaml", "--no-cache").returncode == 0
    (tmp_path / "pyproject.toml").write_text("[tool.gradverify]\nexplore = 20\n")
    completed = gradverify(tmp_path, "cube.yaml", "--no-cache")
    assert completed.returncode == 1, completed.stdout
    assert "found by --explore" in completed.stdout
    assert "- name: small-explored" in completed.stdout


def test_an_explored_run_is_not_answered_from_a_cache_made_without_it(tmp_path: Path):
    shutil.copy(SPECS / "cube.yaml", tmp_path / "cube.yaml")
    first = gradverify(tmp_path, "cube.yaml", "--explore", "0")
    assert first.returncode == 0, first.stdout
    assert gradverify(tmp_path, "cube.yaml", "--explore", "0", "-v").stdout.count("cached") >= 1
    explored_run = gradverify(tmp_path, "cube.yaml")  # explores by default
    assert explored_run.returncode == 1, explored_run.stdout
    explored_run = gradverify(tmp_path, "cube.yaml", "--explore", "20")
    assert explored_run.returncode == 1, explored_run.stdout
