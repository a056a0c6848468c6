"""An unrun branch of backward is explored first: the `if` test at the unrun arc is read
(gradverify.engine.explore.aim), the draws put the argument it compares on the other side of
its literal, and a bug only in that branch is found; where the declared domain keeps the
branch out of reach, the report says explore aimed at it in vain (JSON `branch_coverage`
`explored`, the result's `explored`, the text note)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.engine.explore.aim import ABOVE, BELOW, unrun_arcs
from gradverify.engine.explore.draws import draws
from gradverify.exitcodes import ExitCode
from gradverify.results import Branches
from gradverify.spec.models import Case, FunctionSpec
from gradverify.target.loading import load_target
from tests.explore.json_report import check

pytestmark = pytest.mark.usefixtures("in_repo")
FUNCTIONS = "tests.functions.unrun_branches"
SCALE_CASE = "[{name: two, inputs: [{shape: [3]}, 2.0]}]"
CUBE_CASE = "[{name: wide, inputs: [{shape: [2], low: -3.2, high: 5}]}]"
NARROW_CASE = "[{name: narrow, inputs: [{shape: [2], low: -2, high: 2}]}]"


def spec_file(tmp_path: Path, name: str, cases: str) -> str:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(f"target: {FUNCTIONS}:{name}\ncases: {cases}\n", encoding="utf-8")
    return str(spec)


def failures(report: dict) -> list[dict]:
    return [r for r in report["results"] if r["status"] == "fail"]


def explored(report: dict) -> dict:
    [found] = [r["explored"] for r in report["results"] if r["explored"]]
    return found


def test_a_number_compared_with_a_literal_is_drawn_past_it_and_the_branch_bug_is_found(
    tmp_path: Path,
):
    spec = spec_file(tmp_path, "ScaledClipWrongAboveTen", SCALE_CASE)
    code, report = check(spec, "--explore", "0")
    assert code == ExitCode.OK  # scale = 2: the clipped branch never runs
    [coverage] = report["branch_coverage"]
    assert coverage["run"] == 1 and coverage["branches"] == 2
    for budget in ((), ("--explore", "2")):  # the default, and two draws only
        code, report = check(spec, *budget)
        assert code == ExitCode.FAILED
        [found] = failures(report)
        assert found["check"] == "finite_difference" and found["input_name"] == "x"
        assert "draw 1 of" in found["message"] and "aimed at line" in found["message"]
        assert "scale = " in found["message"] and found["numerical"] == pytest.approx(10.0)
        assert found["explored"]["aimed"] >= 1 and found["explored"]["reached"]


def test_the_usual_draws_never_take_the_branch_that_the_aimed_ones_take():
    """Without aiming, none of the default budget's draws puts scale above 10."""
    case = Case.model_validate({"name": "two", "inputs": [{"shape": [3]}, 2.0]})
    spec = FunctionSpec.model_validate(
        {"target": f"{FUNCTIONS}:ScaledClipWrongAboveTen", "cases": [case.model_dump()]}
    )
    scales = [d.case.inputs[1] for d in draws(case, spec, 0, 20, False)]
    assert max(scales) <= 10


def test_a_tensor_compared_through_a_reduction_gets_elements_past_the_literal(tmp_path: Path):
    spec = spec_file(tmp_path, "CubeWrongWhenAnyBelowMinusThree", CUBE_CASE)
    code, _ = check(spec, "--explore", "0")
    assert code == ExitCode.OK  # the case's own draw has no element below -3
    code, report = check(spec, "--explore", "2")
    assert code == ExitCode.FAILED
    [found] = failures(report)
    assert "draw 1 of 2: aimed at line" in found["message"]


@pytest.mark.parametrize(
    ("name", "cases"), [("ScaledClip", SCALE_CASE), ("CubeBranchingBelowMinusThree", CUBE_CASE)]
)
def test_the_correct_twins_pass_and_the_branch_counts_as_run(tmp_path: Path, name: str, cases: str):
    code, report = check(spec_file(tmp_path, name, cases))
    assert code == ExitCode.OK
    assert explored(report)["reached"] and explored(report)["aimed"] >= 1
    [coverage] = report["branch_coverage"]
    assert coverage["never"] == [] and coverage["explored"] == []


def test_a_branch_out_of_the_declared_domain_gets_the_note(tmp_path: Path):
    spec = spec_file(tmp_path, "CubeWrongWhenAnyBelowMinusThree", NARROW_CASE)
    # A count of draws, not the default time budget, so that the text run below, a second
    # run, draws as many as this one whatever the machine's load.
    code, report = check(spec, "--explore", "10")  # x in [-2, 2]: never below -3
    assert code == ExitCode.OK
    tried = explored(report)
    assert tried["aimed"] >= 1 and not tried["reached"]
    [coverage] = report["branch_coverage"]
    [line] = {arc[1] for arc in coverage["never"]}
    assert coverage["explored"] == [{"line": line, "draws": tried["aimed"], "reached": False}]
    assert tried["aimed_line"] == line
    text = CliRunner().invoke(app, ["check", "--no-cache", "-v", "--explore", "10", spec]).output
    assert f"aimed at line {line}, never reached" in text  # the case's -v line
    assert f"explore tried {tried['aimed']} draws aimed at line {line}; never reached" in text


def test_the_goals_read_from_the_if_test():
    scale = load_target(f"{FUNCTIONS}:ScaledClipWrongAboveTen")
    cube = load_target(f"{FUNCTIONS}:CubeWrongWhenAnyBelowMinusThree")
    for target, inputs, below_def, index, side, literal in (
        (scale, [{"shape": [3]}, 2.0], 1, 1, ABOVE, 10.0),  # `if ctx.scale > 10:`
        (cube, [{"shape": [2]}], 2, 0, BELOW, -3.0),  # `if x.min() < -3:`, x saved
    ):
        case = Case.model_validate({"name": "c", "inputs": inputs})
        assert target.source_file is not None and target.backward_line is not None
        test_line = target.backward_line + below_def
        body, after = test_line + 1, test_line + 2
        branches = Branches("backward", target.source_file, target.backward_line,
                            ((test_line, body), (test_line, after)), ((test_line, after),))  # fmt: skip
        [unrun] = unrun_arcs(target, case, branches)
        assert unrun.line == body
        [goal] = unrun.goals
        assert (goal.index, goal.side, goal.literal) == (index, side, literal)


def test_every_element_past_the_literal_reaches_an_all_and_its_elif(tmp_path: Path):
    """SignedSquare's `if (x > 0).all()` / `elif (x < 0).all()`: a case of both signs runs
    neither; the aimed draws put every element on one side, then the other."""
    spec = tmp_path / "signed.yaml"
    spec.write_text(
        "target: tests.functions.report_claims:SignedSquare\n"
        "cases: [{name: mixed, inputs: [{shape: [6], low: -1.0, high: 1.0}]}]\n",
        encoding="utf-8",
    )
    code, report = check(str(spec), "--explore", "0")
    assert code == ExitCode.OK and len(report["branch_coverage"][0]["never"]) == 2
    code, report = check(str(spec))
    assert code == ExitCode.OK
    assert explored(report)["reached"]
    [coverage] = report["branch_coverage"]
    assert coverage["never"] == [] and coverage["run"] == coverage["branches"] == 4
