"""The `forward` check: forward runs, its outputs are finite, and it leaves its inputs alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
CRASH_SPEC = ROOT / "tests" / "specs" / "checks" / "crash.yaml"

NAN_FORWARD = "tests.functions.structural_bugs:NaNForward"
INPLACE_INPUT = "tests.functions.structural_bugs:InplaceInput"
INPLACE_GRAD_OUTPUT = "tests.functions.structural_bugs:InplaceGradOutput"
FORWARD_RAISES = "tests.functions.mapping:ForwardRaises"


@pytest.fixture(scope="module")
def crash_report(run_spec):
    return run_spec(CRASH_SPEC)


def test_non_finite_output_fails_naming_output_and_element(bugs_report, only):
    result = only(bugs_report, target=NAN_FORWARD, check="forward")
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.element == (1,)
    assert result.input_index is None
    assert "non-finite" in result.message
    assert "inf" in result.message
    assert "overflow" in result.hint


def test_non_finite_output_is_not_blamed_on_forward_for_non_finite_inputs(run_spec, only):
    report = run_spec(
        """
        target: tests.functions.correct:Square
        checks: [forward]
        cases: [{name: inf, inputs: [{values: [1.0, .inf, -2.0]}]}]
        """
    )
    assert only(report, check="forward").status.value == "pass"


def test_modifying_an_input_in_place_fails_naming_the_argument(bugs_report, only):
    result = only(bugs_report, target=INPLACE_INPUT, check="forward")
    assert result.status.value == "fail"
    assert result.input_index == 0
    assert result.input_name == "x"
    assert result.element == (0,)
    assert "modified argument 0 (x) in place" in result.message
    assert "clone" in result.hint


def test_a_correct_forward_passes_and_describes_its_outputs(bugs_report, only):
    result = only(bugs_report, target=INPLACE_GRAD_OUTPUT, check="forward")
    assert result.status.value == "pass"
    assert "[4] float64" in result.message


def test_forward_raising_fails_with_the_users_exception(crash_report, only):
    result = only(crash_report, target=FORWARD_RAISES, check="forward")
    assert result.status.value == "fail"
    assert "ValueError" in result.message
    assert "forward exploded on purpose" in result.message
    assert "mapping.py:" in result.message  # where in the user's file
    assert any("mapping.py" in line for line in result.details)
    assert not any("gradverify/checks" in line for line in result.details)


def test_an_argument_missing_from_a_case_is_a_spec_error_before_forward_runs(run_spec):
    # A setup_context Function binds its arguments with the standard library's `inspect`:
    # the case is compared with forward's signature before that (gradverify.target.arity).
    with pytest.raises(SpecError, match=r"case 'no_beta' gives 1 input but Softplus\.forward"):
        run_spec(
            """
            target: gradverify.examples.transforms:Softplus
            checks: [forward]
            cases: [{name: no_beta, inputs: [{shape: [4]}]}]
            """
        )


def test_checks_after_a_forward_crash_do_not_pass(crash_report, find):
    later = [r for r in find(crash_report, target=FORWARD_RAISES) if r.check != "forward"]
    assert [r.check for r in later] == [
        "backward",
        "finite_difference",
        "gradcheck",
        "gradgradcheck",
    ]
    assert all(r.status.value in ("fail", "skip") for r in later)
    # They point at the crash, which forward's result already tells (once).
    assert all(r.same_as == "forward" for r in later)
    assert not any("forward exploded on purpose" in r.message for r in later)


def test_the_run_continues_after_a_crash(crash_report, find):
    square = find(crash_report, target="tests.functions.correct:Square")
    assert len(square) == 5
    assert all(r.status.value == "pass" for r in square)


def test_an_op_that_returns_nothing_passes_every_default_check(run_spec, find, only):
    # `-> None` with mutates_args=("out",): legitimate. forward passes saying so, the gradient
    # checks do not apply, and nothing in the whole default run fails or warns.
    report = run_spec(
        """
        target: "tests.functions.custom_ops:gradverify_tests::add_into"
        cases: [{name: c, inputs: [{shape: [4]}, {shape: [4], requires_grad: false}]}]
        """
    )
    forward = only(report, check="forward")
    assert forward.status.value == "pass"
    assert "the op returns nothing" in forward.message
    assert "no gradient to check" in forward.message
    assert not find(report, status="fail")
    assert not find(report, status="warn")
    for check in ("backward", "layouts", "finite_difference", "gradcheck", "gradgradcheck"):
        result = only(report, check=check)
        assert not result.applies, result
        assert "no output is differentiable" in result.message
    assert only(report, check="opcheck").status.value == "pass"


def test_zero_config_leaves_an_ops_written_argument_without_gradient():
    # torch allows no autograd formula for an op that mutates: the argument it writes
    # (mutates_args) gets requires_grad false; the others are inferred as before.
    from gradverify.inference.from_signature import infer
    from gradverify.target.loading import load_target

    inference = infer(load_target("tests.functions.custom_ops:gradverify_tests::add_into"))
    x, out = inference.inputs()
    assert "requires_grad" not in x
    assert out["requires_grad"] is False
    assert "mutates_args" in inference.choices[1].reason
