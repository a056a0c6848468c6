"""Shapes the layouts miss (issue 23): a tensor of rank 3 beside one of rank 2, a last dim
as wide as forward reads it, two inputs of one role at other sizes (N ≠ M), a batch of
square matrices; each with a buggy Function only it reaches, and the correct twin
(tests/functions/shapes.py)."""

from __future__ import annotations

from gradverify.inference.from_signature import Inference
from gradverify.inference.reading.dataflow import flow_of
from gradverify.inference.rules.shapes import components
from gradverify.results import Report, Status
from tests.functions import shapes
from tests.inference import runs
from tests.inference.runs import failed_cases

MODULE = "tests.functions.shapes"


def inferred(name: str) -> Inference:
    return runs.inferred(f"{MODULE}:{name}")


def zero_config(name: str) -> Report:
    return runs.zero_config(f"{MODULE}:{name}")


# --- each tensor at ranks up to 4, a subscripted last dim ---------------------------------


def test_literal_subscripts_of_one_axis_give_its_size() -> None:
    lookup = shapes.BilinearLookup

    assert components(flow_of(lookup.forward, None, ("grid", "xy"))) == {"xy": (1, 2)}


def test_a_rank_3_grid_is_tried_beside_points_of_two_coordinates() -> None:
    grid, xy = inferred("BilinearLookup").choices

    assert (grid.shape, xy.shape) == ((3, 4, 5), (2, 2))


def test_a_right_bilinear_lookup_passes_zero_config() -> None:
    assert zero_config("BilinearLookup").passed


def test_a_wrong_bilinear_lookup_fails_zero_config_on_its_points() -> None:
    report = zero_config("BilinearLookupSwapsAxes")

    assert "inferred" in failed_cases(report)
    failed = [r.message for r in report.results if r.status is Status.FAIL]
    assert all("argument 1 (xy)" in message for message in failed)


# --- two inputs of one role at other sizes ------------------------------------------------


def test_two_inputs_of_one_shape_get_a_case_at_other_sizes() -> None:
    extra = dict(inferred("MeanSquaredDistance").extra)

    x, y = extra["y [3, 4]"]
    assert (x.shape, y.shape) == ((2, 4), (3, 4))


def test_a_count_of_one_input_where_the_other_belongs_fails_where_n_differs_from_m() -> None:
    report = zero_config("MeanSquaredDistanceCountsX")

    assert failed_cases(report) == {"inferred: y [3, 4]"}


def test_a_right_pairwise_distance_passes_at_other_sizes() -> None:
    report = zero_config("MeanSquaredDistance")

    assert report.passed
    assert report.summary.cases == 2


# --- a batch of square matrices -----------------------------------------------------------


def test_a_square_matrix_gets_a_batch_of_them() -> None:
    labels = [label for label, _ in inferred("Trace").extra]

    assert "a [2, 3, 3]" in labels


def test_a_backward_that_sums_over_the_batch_fails_on_the_batch_only() -> None:
    report = zero_config("TraceSumsTheBatch")

    assert failed_cases(report) == {"inferred: a [2, 3, 3]"}


def test_a_right_trace_passes_its_batch() -> None:
    assert zero_config("Trace").passed


# --- an axis unbound into names, kept in the other ranks ----------------------------------


def test_an_unbound_axis_gives_its_size_and_the_other_ranks_keep_it() -> None:
    inference = inferred("PolarRadius")

    assert [choice.shape for choice in inference.choices] == [(2,)]
    assert [label for label, _ in inference.extra] == ["points [3, 2]", "points [2, 3, 2]"]
    assert [choices[0].shape for _, choices in inference.extra] == [(3, 2), (2, 3, 2)]


def test_a_right_function_of_unbound_coordinates_passes_every_rank() -> None:
    report = zero_config("PolarRadius")

    assert report.passed
    assert report.summary.cases == 3
