"""The `gradcheck` check: torch.autograd.gradcheck, its findings mapped to forward's arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.shared.torch_gradcheck import Mismatch, explain_other_failure, parse_mismatch
from tests.functions.mapping import AxpyLiteralFirst
from tests.functions.value_bugs import FlippedSign

ROOT = Path(__file__).resolve().parents[2]
MAPPING_SPEC = ROOT / "tests" / "specs" / "checks" / "mapping.yaml"
CHECK = "gradcheck"
VALUE_BUGS = "tests.functions.value_bugs"
STRUCTURAL_BUGS = "tests.functions.structural_bugs"


@pytest.fixture(scope="module")
def mapping_report(run_spec):
    return run_spec(MAPPING_SPEC)


def torch_message(function, *arguments):
    with pytest.raises(GradcheckError) as raised:
        torch.autograd.gradcheck(function.apply, arguments)
    return str(raised.value)


def vector(seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(4, generator=generator, dtype=torch.float64).requires_grad_()


def test_torch_messages_still_parse():
    # torch calls y (argument 2) "input 1": it counts only the inputs that require grad.
    assert parse_mismatch(torch_message(FlippedSign, vector(0))) == Mismatch(output=0, input=0)
    message = torch_message(AxpyLiteralFirst, 2.0, vector(1), vector(2))
    assert parse_mismatch(message) == Mismatch(output=0, input=1)


def test_other_failures_are_explained():
    text, hint = explain_other_failure("Backward is not reentrant, i.e., running backward ...")
    assert "nondeterministic" in text
    assert "nondet_tol" in hint
    assert explain_other_failure("Something new\nand more") == ("Something new", None)
    assert parse_mismatch("Something new") is None


def test_a_literal_first_maps_torchs_input_0_to_argument_1(mapping_report, only):
    result = only(mapping_report, target="tests.functions.mapping:ScaleLiteralFirst", check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (1, "x")
    assert "argument 1 (x)" in result.message
    assert result.element is not None
    assert result.analytical == pytest.approx(result.numerical / 2, rel=1e-6)
    assert "1/2" in result.hint


def test_a_literal_first_maps_torchs_input_1_to_argument_2(mapping_report, only):
    result = only(mapping_report, target="tests.functions.mapping:AxpyLiteralFirst", check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (2, "y")
    assert "opposite sign" in result.hint


@pytest.mark.parametrize(
    "bug",
    [
        "WrongTransposeMatMul",
        "FlippedSign",
        "MissingOneOverN",
        "WrongBroadcastReduction",
        "BugOnlyInSecondArgument",
        "ZeroGradient",
    ],
)
def test_gradcheck_locates_value_bugs_where_finite_differences_do(bugs_report, find, only, bug):
    target = f"{VALUE_BUGS}:{bug}"
    result = only(bugs_report, target=target, check=CHECK)
    (located,) = find(bugs_report, target=target, check="finite_difference", status="fail")
    assert result.status.value == "fail"
    assert (result.input_index, result.element, result.output_index) == (
        located.input_index,
        located.element,
        located.output_index,
    )
    assert result.analytical == pytest.approx(located.analytical)
    assert result.hint == located.hint


def test_nondeterministic_backward_is_explained(bugs_report, only):
    target = "tests.functions.structural_bugs:NondeterministicBackward"
    result = only(bugs_report, target=target, check=CHECK)
    assert result.status.value == "fail"
    assert "nondeterministic" in result.message


def test_a_correct_function_passes(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.correct:MatMul
        checks: [gradcheck]
        cases: [{name: float32, inputs: [{shape: [2, 3], dtype: float32}, {shape: [3, 2]}]}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert result.notes == ("argument 0 (a) promoted from float32 to float64 for this check",)


def test_a_crash_points_at_the_line_that_raised(run_spec, only):
    report = run_spec(
        f"target: {STRUCTURAL_BUGS}:BackwardNotWritten\nchecks: [gradcheck]\n"
        "cases: [{name: c, inputs: [{shape: [3]}]}]\n"
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert "raised ValueError" in result.message
    source = ROOT / "tests" / "functions" / "structural_bugs.py"
    assert Path(result.source_file or "") == source
    lines = source.read_text(encoding="utf-8").splitlines()
    assert result.source_line == 1 + next(i for i, ln in enumerate(lines) if "RAISES HERE" in ln)
