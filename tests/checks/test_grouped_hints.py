"""Hints that name a per-group factor (a missing division by a count or a norm) and a lost
repeated index read through two statements (numerics/patterns.py), each with a correct twin
and a bug the hint would be a false lead for (tests/functions/table_reads.py)."""

from __future__ import annotations

import pytest

FUNCTIONS = "tests.functions.table_reads"
SEGMENTS = "[{shape: [6, 2]}, {values: [0, 0, 0, 1, 1, 2], dtype: int64}, 3]"


def report_of(run_spec, name, inputs):
    return run_spec(
        f"""
        target: {FUNCTIONS}:{name}
        checks: [finite_difference]
        explore: 0
        cases: [{{name: case, inputs: {inputs}}}]
        """
    )


def fd(run_spec, only, name, inputs, argument=0):
    return only(report_of(run_spec, name, inputs), check="finite_difference", input_index=argument)


def test_a_segment_mean_without_its_count_is_named_a_missing_division(run_spec, only):
    result = fd(run_spec, only, "SegmentMeanNoCount", SEGMENTS)

    assert result.status.value == "fail"
    assert result.hint.startswith(
        "backward is off by a factor that differs per element, constant within groups "
        "(numerical/analytical = 0.333, 0.5): likely a missing division by a count"
    )


def test_a_right_segment_mean_passes_quietly(run_spec, only):
    result = fd(run_spec, only, "SegmentMean", SEGMENTS)

    assert result.status.value == "pass" and result.hint is None


@pytest.mark.parametrize(
    ("name", "inputs"),
    [
        ("SegmentMeanTimesValues", SEGMENTS),  # a factor that differs within each segment
        ("RowScaleWrong", "[{shape: [3, 4]}, {shape: [3]}]"),  # one entry per line
    ],
)
def test_factors_that_are_not_constant_per_group_get_no_normalisation_hint(
    run_spec, find, name, inputs
):
    failed = [
        r
        for r in find(report_of(run_spec, name, inputs), check="finite_difference")
        if r.status.value == "fail"
    ]
    assert failed
    assert all(r.hint is None or "differs per element" not in r.hint for r in failed)


# --- repeated indices, some elements read twice through two statements ----------------------

INTERPOLATION = (
    "[{shape: [5]}, {values: [0, 1, 1, 3, 0, 2], dtype: int64, requires_grad: false}, "
    "{shape: [6], low: 0.0, high: 1.0}]"
)


def test_an_interpolation_that_loses_repeats_gets_the_index_add_hint_from_spec_values(
    run_spec, only
):
    # table element 3 is read by idx and by idx + 1 once each: read twice, and right
    result = fd(run_spec, only, "Interp1dLosesRepeats", INTERPOLATION)

    assert result.status.value == "fail"
    assert "of table that forward reads more than once (3 of 5 elements" in result.hint
    assert "`index_add_`" in result.hint


def test_the_accumulating_interpolation_passes_on_those_values(run_spec, only):
    result = fd(run_spec, only, "Interp1d", INTERPOLATION)

    assert result.status.value == "pass" and result.hint is None


def test_one_wrong_group_is_shown_beside_the_right_ones(run_spec, only):
    inputs = "[{shape: [6, 2]}, {values: [0, 0, 1, 2, 3, 4], dtype: int64}, 5]"
    result = fd(run_spec, only, "SegmentMeanNoCount", inputs)

    assert "(numerical/analytical = 0.5, 1 where it is right)" in result.hint
