"""One root cause, one finding: `same_as` on failures that repeat an earlier one."""

from __future__ import annotations

import math
from dataclasses import replace

from gradverify.engine.folding import fold
from gradverify.results import Result, Status, finding_key

INF_SPEC = """
target: tests.functions.report:LogOfZero
cases: [{name: vector, inputs: [{shape: [4], low: 0.5, high: 2.0}]}]
"""


def failure(check: str, message: str = "wrong", **fields) -> Result:
    return Result("m:F", "c", check, Status.FAIL, message, **fields)


def test_one_non_finite_forward_output_is_one_finding(run_spec, find, only):
    report = run_spec(INF_SPEC)
    failures = find(report, status="fail")
    assert {r.check for r in failures} >= {"forward", "backward", "finite_difference", "gradcheck"}
    assert only(report, check="forward").same_as is None
    assert all(r.same_as == "forward" for r in failures if r.check != "forward")


def test_a_non_finite_gradient_is_the_finding_when_forward_is_fine(run_spec, find, only):
    report = run_spec(
        """
        target: tests.functions.structural_bugs:NaNGradient
        checks: [forward, backward, finite_difference, gradcheck]
        cases: [{name: vector, inputs: [{shape: [4]}]}]
        """
    )
    assert only(report, check="backward", status="fail").same_as is None
    later = find(report, check="finite_difference", status="fail")
    assert later and all(r.same_as == "backward" for r in later)


def test_gradcheck_confirming_finite_difference_points_at_it(buggy_report, find):
    for gradcheck in find(buggy_report, check="gradcheck", status="fail"):
        assert gradcheck.same_as == "finite_difference"
    assert not any(r.same_as for r in find(buggy_report, check="finite_difference"))


def test_statuses_never_change():
    produced = fold(
        [failure("forward", message="x for finite inputs")],
        [failure("backward", analytical=math.inf)],
    )
    assert produced[0].status is Status.FAIL and produced[0].same_as == "forward"


def test_a_finite_finding_after_a_non_finite_output_is_its_own():
    forward = Result("m:F", "c", "forward", Status.FAIL, "output 0 is inf for finite inputs")
    real_bug = failure("finite_difference", analytical=1.0, numerical=0.0, max_abs_error=1.0)
    assert fold([forward], [real_bug])[0].same_as is None


def test_different_findings_are_not_folded():
    first = failure("finite_difference", input_index=0, element=(1,), analytical=1.0, numerical=0.0)
    other = failure("gradcheck", input_index=1, element=(1,), analytical=1.0, numerical=0.0)
    assert fold([first], [other])[0].same_as is None


def test_failures_of_the_same_check_are_not_folded_into_each_other():
    produced = fold(
        [],
        [
            failure("gradgradcheck", analytical=math.nan),
            failure("gradgradcheck", analytical=math.inf),
        ],
    )
    assert [r.same_as for r in produced] == [None, None]


def test_a_chain_points_at_its_root():
    forward = Result("m:F", "c", "forward", Status.FAIL, "output 0 is inf for finite inputs")
    folded = fold(
        [forward], [failure("finite_difference", element=(0,), analytical=math.inf, numerical=0.0)]
    )
    again = fold(
        [forward, *folded], [failure("gradcheck", element=(0,), analytical=math.inf, numerical=0.0)]
    )
    assert again[0].same_as == "forward"


def test_a_kink_warning_repeated_by_gradcheck_points_at_finite_difference(run_spec, find):
    report = run_spec(
        """
        target: gradverify.examples.activations:ClippedReLU
        checks: [finite_difference, gradcheck]
        cases: [{name: at_kinks, inputs: [{values: [-1.5, 0.0, 0.5, 1.0, 1.5]}, 1.0]}]
        """
    )
    (first,) = find(report, check="finite_difference", status="warn")
    (again,) = find(report, check="gradcheck", status="warn")
    assert (first.same_as, again.same_as) == (None, "finite_difference")


def test_a_warning_never_folds_into_a_failure():
    failed = failure("finite_difference", element=(0,), analytical=1.0, numerical=0.0)
    warned = Result(
        "m:F", "c", "gradcheck", Status.WARN, "kink", element=(0,), analytical=1.0, numerical=0.0
    )
    assert fold([failed], [warned])[0].same_as is None


def test_a_run_of_cases_in_workers_reports_wasted_work_once_per_function(tmp_path, in_repo):
    """Through the CLI, whose session runs cases in worker processes."""
    import json

    from typer.testing import CliRunner

    from gradverify.cli import app

    spec = tmp_path / "waste.yaml"
    spec.write_text(
        "target: tests.functions.report:MulWastesOnlyW\n"
        "checks: [layouts]\n"
        "cases:\n"
        "  - {name: a, inputs: [{shape: [3]}, {shape: [3]}]}\n"
        "  - {name: b, inputs: [{shape: [4]}, {shape: [4]}]}\n"
        "  - {name: c, inputs: [{shape: [5]}, {shape: [5]}]}\n",
        encoding="utf-8",
    )
    run = CliRunner().invoke(
        app, ["check", str(spec), "--format", "json", "--no-cache", "--jobs", "2"]
    )
    assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    warnings = [r for r in document["results"] if r["status"] == "warn"]
    assert [(r["case"], r["check"]) for r in warnings] == [("a", "layouts")]
    assert document["summary"]["warnings"] == 1


SECOND_ORDER_AFTER_FIRST = """
functions:
  - target: tests.functions.structural_bugs:NondeterministicBackward
    checks: [backward, finite_difference, gradcheck, gradgradcheck]
    cases: [{name: vector, inputs: [{shape: [4]}]}]
  - target: tests.functions.structural_bugs:WrongGradDtype
    checks: [backward, finite_difference, gradcheck, gradgradcheck]
    cases: [{name: vector, inputs: [{shape: [4]}]}]
  - target: tests.functions.second_order:DetachedBackwardSquare
    checks: [backward, finite_difference, gradcheck, gradgradcheck]
    cases: [{name: vector, inputs: [{shape: [4]}]}]
"""


def test_a_second_derivative_wrong_after_the_first_is_one_line_under_it(run_spec, find):
    from gradverify.report import RenderOptions, text

    report = run_spec(SECOND_ORDER_AFTER_FIRST)
    for name in ("NondeterministicBackward", "WrongGradDtype"):
        target = f"tests.functions.structural_bugs:{name}"
        second = find(report, target=target, check="gradgradcheck", status="fail")
        assert second and all(r.same_as == "backward" for r in second), second
    # Where the first derivative is right, the wrong second one is the finding itself.
    (detached,) = find(report, check="gradgradcheck", status="fail", same_as=None)
    assert detached.target.endswith(":DetachedBackwardSquare")
    rendered = text.render(report, RenderOptions(width=100))
    panels = [line for line in rendered.splitlines() if line.startswith("╭─ ✗ gradgradcheck")]
    assert len(panels) == 1  # DetachedBackwardSquare's
    assert rendered.count("  gradgradcheck: the same finding as backward\n") == 2


def test_the_same_finding_is_the_same_numbers_at_the_same_place_whoever_found_it():
    found = failure("finite_difference", input_index=0, element=(1,), analytical=1.0, numerical=2.0)
    confirmed = replace(found, check="gradcheck", message="other words")
    elsewhere = replace(found, case="other case")
    assert finding_key(found) == finding_key(confirmed)
    assert finding_key(found) != finding_key(elsewhere)
    assert finding_key(failure("forward")) is None  # no analytical value: nothing to compare


def test_a_nan_found_twice_is_not_one_finding_by_its_numbers():
    # float equality, as folding has always compared: non-finite findings fold by what they
    # are about (non_finite), not by their numbers.
    first = failure("finite_difference", analytical=float("nan"), numerical=1.0)
    second = replace(first, check="gradcheck", analytical=float("nan"))
    assert finding_key(first) != finding_key(second)
    assert fold([first], [second])[0].same_as == "finite_difference"  # by non_finite


def test_folding_and_every_renderer_read_one_finding_key():
    from gradverify import api
    from gradverify.engine import folding
    from gradverify.report import github, html

    for module in (folding, html, github, api):
        assert module.finding_key is finding_key, module.__name__


def test_a_lint_finding_about_the_code_is_reported_once_per_function(tmp_path, in_repo):
    """`ctx.x holds a float64 tensor of shape [4]` and `... of shape [2, 3]` are one finding
    about one line of the Function: its first case shows it, noting the others."""
    import json

    from typer.testing import CliRunner

    from gradverify.cli import app

    spec = tmp_path / "ctx.yaml"
    spec.write_text(
        "target: tests.functions.pitfalls:CtxTensorAttribute\n"
        "checks: [lint]\n"
        "cases:\n"
        "  - {name: a, inputs: [{shape: [4]}, 2.0]}\n"
        "  - {name: b, inputs: [{shape: [2, 3]}, 2.0]}\n",
        encoding="utf-8",
    )
    run = CliRunner().invoke(app, ["check", str(spec), "--format", "json", "--no-cache"])
    assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    (warning,) = [r for r in document["results"] if r["status"] == "warn"]
    assert (warning["case"], warning["rule"]) == ("a", "GV101")
    assert "of shape [4]" in warning["message"]
    assert "the same in 1 more case(s) of this Function (b)" in " ".join(warning["notes"])


# torch.func's transforms run backward: where they give backward's gradient, a first-order
# check's failure on that argument is the finding (issue 28: func counted it again).

INHERITED = (
    "torch.func grad, vjp give backward's gradient of argument 0 (x), which disagrees with "
    "finite differences at element [1]: torch.func 1, finite differences 2"
)


def test_func_giving_backwards_wrong_gradient_folds_under_gradcheck_without_finite_difference():
    gradcheck = failure("gradcheck", input_index=0, element=(3,), analytical=1.0, numerical=2.0)
    func = failure("func", INHERITED, input_index=0, element=(1,), analytical=1.0, numerical=2.0)
    (folded,) = fold([gradcheck], [func])
    assert (folded.status, folded.same_as) == (Status.FAIL, "gradcheck")


def test_func_folds_under_finite_difference_before_gradcheck_and_only_on_its_argument():
    fd = failure("finite_difference", input_index=0, element=(2,), analytical=3.0, numerical=1.0)
    gradcheck = replace(fd, check="gradcheck", same_as="finite_difference")
    func = failure("func", INHERITED, input_index=0, element=(1,), analytical=1.0, numerical=2.0)
    assert fold([fd, gradcheck], [func])[0].same_as == "finite_difference"
    elsewhere = replace(func, input_index=1)
    assert fold([fd, gradcheck], [elsewhere])[0].same_as is None


def test_funcs_own_disagreement_with_backward_is_its_own_finding():
    fd = failure("finite_difference", input_index=0, element=(2,), analytical=3.0, numerical=1.0)
    own = failure(
        "func",
        "torch.func.grad gives a wrong gradient of argument 0 (x) at element [1]: grad 5, "
        "finite differences 1, backward 3",
        input_index=0,
        analytical=5.0,
        numerical=1.0,
    )
    assert fold([fd], [own])[0].same_as is None
