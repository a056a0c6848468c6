"""Regressions from the issue-10 sweep: realistic Functions of the new forms, run end to end."""

from __future__ import annotations

SWEEP = "tests.functions.sweep"


def test_a_function_without_outputs_is_a_forward_failure_not_an_internal_error(run_spec, only):
    report = run_spec(
        f"""
        target: {SWEEP}:returns_none
        cases: [{{name: case, inputs: [{{shape: [4]}}]}}]
        """
    )
    result = only(report, check="forward")
    assert result.status.value == "fail"
    assert "no tensor" in result.message
