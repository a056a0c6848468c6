"""Reports that claim no more than the evidence (issue 23): which branches of backward the
cases ran, a second derivative wrong "on this case's inputs" only where a first-order check
passed, the NaN second-derivative hint, a reference whose own gradient is wrong, complex
values with both parts (tests/functions/report_claims.py, tests/specs/report/claims.yaml)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from gradverify.report import FORMATS, RenderOptions
from gradverify.results import branch_coverage
from tests.functions import report_claims

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests" / "specs" / "report" / "claims.yaml"
FUNCTIONS = "tests.functions.report_claims"


@pytest.fixture(scope="module")
def report(run_spec):
    return run_spec(SPEC)


def line_of(function: object, text: str) -> int:
    lines, first = inspect.getsourcelines(function)  # type: ignore[arg-type]
    return first + next(i for i, line in enumerate(lines) if text in line)


# Branch coverage.


def test_the_branches_no_case_ran_are_named(report):
    found = {item.target: item for item in branch_coverage(report.results)}
    signed = found[f"{FUNCTIONS}:SignedSquare"]
    backward = report_claims.SignedSquare.backward
    positive = line_of(backward, "return grad * 2 * x\n")
    negative = line_of(backward, "return grad * -2 * x")
    assert (len(signed.possible), len(signed.never)) == (4, 2)
    assert sorted(to for _, to in signed.never) == [positive, negative]
    assert signed.line == line_of(backward, "def backward")


def test_the_branch_line_is_in_text_and_json(report):
    found = {item.target: item for item in branch_coverage(report.results)}
    signed = found[f"{FUNCTIONS}:SignedSquare"]
    lines = sorted(to for _, to in signed.never)
    text = FORMATS["text"](report, RenderOptions())
    assert f"backward: 2 of 4 branches run (lines {lines[0]}, {lines[1]} never)" in text
    plain = json.loads(FORMATS["json"](report, RenderOptions()))
    (entry,) = [e for e in plain["branch_coverage"] if e["target"].endswith(":SignedSquare")]
    assert (entry["branches"], entry["run"]) == (4, 2)
    assert sorted(arc[1] for arc in entry["never"]) == lines
    assert all("results" in plain and "summary" in plain for _ in [0])  # the contract stays


def test_every_branch_run_is_not_printed_and_a_case_on_one_side_adds_its_branch(run_spec):
    report = run_spec(
        f"""
        target: {FUNCTIONS}:SignedSquare
        checks: [backward]
        cases:
          - {{name: mixed, inputs: [{{shape: [6], low: -1.0, high: 1.0}}]}}
          - {{name: positive, inputs: [{{shape: [6], low: 0.5, high: 1.0}}]}}
          - {{name: negative, inputs: [{{shape: [6], low: -1.0, high: -0.5}}]}}
        """
    )
    (found,) = branch_coverage(report.results)
    assert found.complete
    assert "branches run" not in FORMATS["text"](report, RenderOptions())
    assert "backward: 4 of 4 branches run" in FORMATS["text"](report, RenderOptions(verbose=True))


def test_no_branch_coverage_for_a_function_without_a_backward(run_spec):
    report = run_spec(
        f"""
        target: {FUNCTIONS}:signed_square
        checks: [backward, finite_difference]
        cases: [{{name: plain, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert branch_coverage(report.results) == []
    assert all(result.branches is None for result in report.results)


def test_a_custom_ops_registered_backward_is_measured_and_a_cpp_one_is_not(run_spec):
    report = run_spec(
        f"""
        functions:
          - target: {FUNCTIONS}:gradverify_claims::signed_square
            checks: [backward, finite_difference]
            cases: [{{name: mixed, inputs: [{{shape: [6], low: -1.0, high: 1.0}}]}}]
          - target: op:aten::sin
            checks: [backward, finite_difference]
            cases: [{{name: plain, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert not any(result.failed for result in report.results)
    (found,) = branch_coverage(report.results)
    assert found.target == f"{FUNCTIONS}:gradverify_claims::signed_square"
    positive = line_of(report_claims._signed_square_backward, "return grad * 2 * x\n")
    assert [to for _, to in found.never] == [positive]


# "The first derivative is right", and only on this case's inputs.


def test_a_second_derivative_wrong_where_the_first_passed_is_said_of_this_case(report, find):
    for result in find(report, target=f"{FUNCTIONS}:SquareDetached", check="gradgradcheck"):
        assert result.failed
        assert "on this case's inputs the first derivative is right" in result.hint
        assert "finite_difference passed" in result.hint
        assert "--explore" in result.hint


def test_no_first_derivative_is_right_without_a_first_order_pass(run_spec, only):
    report = run_spec(
        f"""
        target: {FUNCTIONS}:SquareDetached
        checks: [gradgradcheck]
        cases: [{{name: alone, inputs: [{{shape: [3]}}]}}]
        """
    )
    result = only(report, check="gradgradcheck")
    assert result.failed
    assert "first derivative is right" not in result.hint
    assert "no first-order check ran" in result.hint


# NaN second derivatives.


def test_a_nan_second_derivative_from_sqrt_inside_where_gets_the_double_where_hint(report, find):
    (failure, *_) = find(report, target=f"{FUNCTIONS}:SqrtRelu", check="gradgradcheck")
    assert failure.failed
    assert "double-where trick" in failure.hint
    assert "`sqrt`" in failure.hint and "torch.where" in failure.hint
    assert ".detach()" not in failure.hint
    assert not find(report, target=f"{FUNCTIONS}:SqrtReluSafe", status="fail")


def test_a_nan_second_derivative_from_a_power_at_0_names_it_and_where_the_output_is_0(
    run_spec, find
):
    report = run_spec(
        f"""
        target: {FUNCTIONS}:ReluPow
        checks: [finite_difference, gradgradcheck]
        cases: [{{name: both_sides, inputs: [{{shape: [8], low: -1.0, high: 1.0}}]}}]
        """
    )
    (failure, *_) = find(report, check="gradgradcheck", status="fail")
    line = line_of(report_claims.ReluPow.backward, "** 0.5")
    assert "likely `**` at 0 (the output is 0 at " in failure.hint
    assert f"in backward (line {line})" in failure.hint
    assert ".detach()" not in failure.hint and "torch.where" not in failure.hint


# A reference whose own gradient is wrong; no surrogate hint where finite_difference passed.


def test_a_reference_whose_own_gradient_is_wrong_is_the_finding(report, only):
    result = only(report, target=f"{FUNCTIONS}:Cube", check="reference")
    assert result.status.value == "warn"  # the Function is right: never called wrong
    assert result.message.startswith("the reference's own gradient of argument 0 (x) is wrong")
    assert "surrogate" not in result.hint
    assert f"{FUNCTIONS}:cube_detached" in result.hint
    # autograd through x·x̂·x̂ gives x² (times the seed), its finite differences 3x²
    assert result.numerical == pytest.approx(3 * result.analytical, rel=1e-5)


def test_torch_linalg_det_at_a_singular_matrix_is_a_wrong_reference_not_a_wrong_function(
    report, only
):
    result = only(report, target=f"{FUNCTIONS}:Det", check="reference")
    assert result.status.value == "warn"
    assert result.message.startswith("the reference's own gradient of argument 0 (matrix)")
    assert result.analytical == 0.0  # torch.linalg.det's gradient there
    assert result.numerical != pytest.approx(0.0, abs=0.1)  # the cofactor, by differences
    assert "torch.linalg:det" in result.hint and "surrogate" not in result.hint


def test_a_wrong_function_still_fails_against_a_right_reference(report, only):
    result = only(report, target=f"{FUNCTIONS}:CubeWrong", check="reference")
    assert result.failed
    assert "reference's own gradient" not in result.message


# Complex values show both parts.


def test_a_complex_reference_failure_shows_both_parts(report, find):
    (output, *_) = find(report, target=f"{FUNCTIONS}:ComplexRotate", check="reference")
    assert output.failed and output.output_index is not None
    function, reference = re.search(r"Function (\S+), reference (\S+) ", output.message).groups()
    assert complex(function) != complex(reference)
    assert complex(function).imag != 0 and complex(reference).imag != 0
    assert complex(function).real == pytest.approx(output.analytical, rel=1e-5)


# A finding the same in every case of a target is printed once.


def test_a_finding_in_every_case_is_printed_once_and_counted(run_spec):
    cases = "\n".join(
        f"          - {{name: case{n}, inputs: [{{shape: [{n + 2}]}}]}}" for n in range(8)
    )
    entries = "\n".join(
        f"""
  - target: {FUNCTIONS}:{square.__name__}
    checks: [finite_difference, gradgradcheck]
    cases:
{cases}"""
        for square in report_claims.SQUARES_DETACHED
    )
    report = run_spec("functions:" + entries.replace("\n          -", "\n      -"))
    failed = [r for r in report.results if r.failed]
    assert len(failed) == 15 * 8  # JSON keeps every result
    text = FORMATS["text"](report, RenderOptions())
    assert len(text.splitlines()) < 300
    # One panel for the 15 Functions alike, naming its other cases and the other Functions...
    assert text.count("╭─ ✗ gradgradcheck") == 1
    assert (
        len(re.findall(r"also in +7 more cases: case1, case2, case3, case4, case5 and", text)) == 1
    )
    assert re.search(r"same in +14 more Functions in tests.functions.report_claims: Square", text)
    # ...and each of those is its status line and one line pointing at that panel.
    first = f"{FUNCTIONS}:{report_claims.SQUARES_DETACHED[0].__name__}"
    assert text.count(f"✗ gradgradcheck · argument 0 (x): as in {first}") == 14
    assert text.count("  8 cases  8 passed, 8 failed") == 14
    plain = json.loads(FORMATS["json"](report, RenderOptions()))
    assert sum(1 for r in plain["results"] if r["status"] == "fail") == 15 * 8
    quiet = FORMATS["text"](report, RenderOptions(quiet=True))
    assert quiet.count("7 more cases") == 2  # the panel's `also in`, and its cases' line


def test_findings_that_differ_are_each_shown(report):
    text = FORMATS["text"](report, RenderOptions())
    # Cube's warning and CubeWrong's failures are of two targets: nothing folds across them
    assert "the reference's own gradient" in text and "differs from the reference" in text


@pytest.mark.parametrize(
    ("analytical", "numerical", "linear", "kept"),
    [
        ([-1.0, -2.0, -3.0, -4.0], [1.0, 2.0, 3.0, 4.0], True, "likely a flipped sign"),
        ([-0.5, -1.0, -1.5, -2.0], [1.0, 2.0, 3.0, 4.0], True, "likely a division by 2"),
        ([0.5, 1.0, 1.0, 1.0], [0.5, 2.0, 3.0, 4.0], False, "likely a clamp in backward"),
    ],
)
def test_a_hint_without_its_surrogate_advice_keeps_its_cause(analytical, numerical, linear, kept):
    """Where finite_difference passed, a pattern that an intended surrogate also makes is
    named without the advice to declare one (checks/shared/jacobian_verdicts.py)."""
    import torch

    from gradverify.numerics.compare import compare
    from gradverify.numerics.diagnosis import diagnose

    ours = torch.diag(torch.tensor(analytical, dtype=torch.float64))
    truth = torch.diag(torch.tensor(numerical, dtype=torch.float64))
    off = compare(ours, truth, 1e-5, 1e-3).off
    hint = diagnose(ours, truth, off, None, "x", 1e-5, 1e-3, lambda: linear)
    assert hint is not None and "surrogate" in hint
    stripped = diagnose(ours, truth, off, None, "x", 1e-5, 1e-3, lambda: linear, surrogate=False)
    assert stripped is not None and "surrogate" not in stripped and kept in stripped


def test_a_case_from_the_cache_keeps_its_branches(tmp_path):
    from gradverify.run import session
    from gradverify.spec.load import load_spec_file

    entries = [e for e in load_spec_file(SPEC) if e.spec.target.endswith(":SignedSquare")]
    options = session.RunOptions(isolation=False, cache=True, cache_dir=tmp_path / "cache")
    first = session.run(entries, options)
    again = session.run(entries, options)
    assert all(result.cached for result in again.results)
    assert branch_coverage(again.results) == branch_coverage(first.results) != []


def test_a_jump_never_taken_to_a_line_that_ran_is_named_as_a_jump(run_spec):
    from gradverify.examples.linear import Linear

    report = run_spec(
        """
        target: gradverify.examples.linear:Linear
        checks: [backward]
        cases: [{name: all, inputs: [{shape: [4, 3]}, {shape: [2, 3]}, {shape: [2]}]}]
        """
    )
    (found,) = branch_coverage(report.results)
    first = line_of(Linear.backward, "if ctx.needs_input_grad[0]")
    second = line_of(Linear.backward, "if ctx.needs_input_grad[1]")
    third = line_of(Linear.backward, "if bias is not None")
    assert set(found.never) == {(first, second), (second, third), (third, third + 2)}
    text = FORMATS["text"](report, RenderOptions(width=200))
    assert f"({first}->{second}, {second}->{third}, {third}->{third + 2} never taken)" in text
    assert f"line {second} never" not in text  # it ran: every case needs every gradient


def test_layouts_runs_count_the_branches_for_an_input_that_needs_no_gradient(run_spec):
    report = run_spec(
        """
        target: gradverify.examples.linear:Linear
        checks: [backward, layouts]
        cases: [{name: all, inputs: [{shape: [4, 3]}, {shape: [2, 3]}, {shape: [2]}]}]
        """
    )
    (found,) = branch_coverage(report.results)
    assert found.complete  # layouts ran backward with each input in turn not requiring grad
    assert "branches run" not in FORMATS["text"](report, RenderOptions())


def test_a_branch_on_needs_input_grad_that_none_ran_points_at_layouts(run_spec):
    """Without layouts, `if ctx.needs_input_grad[i]`'s other side never runs, and new values
    (what explore draws) never take it: the note names the check that does."""
    report = run_spec(
        """
        target: gradverify.examples.linear:Linear
        checks: [backward, finite_difference]
        cases: [{name: all, inputs: [{shape: [4, 3]}, {shape: [2, 3]}, {shape: [2]}]}]
        """
    )
    (found,) = branch_coverage(report.results)
    assert not found.complete
    text = " ".join(FORMATS["text"](report, RenderOptions(width=200)).split())
    assert (
        "not checked by any case: it runs where an input does not require grad; add `layouts` "
        "to the checks, which runs each input so in turn"
    ) in text
    assert "--explore" not in text
