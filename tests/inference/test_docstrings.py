"""Zero-config reads what a Function's docstrings and call sites say of its inputs
(tests/functions/docstrings.py): shapes in the ways packages write them, never a range of
values as a shape, constants, a surrogate backward declared; a correct twin passes, a buggy
twin fails, and a number guessed where backward returns a tensor gradient is a failed guess."""

from __future__ import annotations

import inspect
import warnings

import pytest

import tests.functions.docstrings as docstring_functions
from gradverify.inference.choice import Choice
from gradverify.inference.from_signature import infer
from gradverify.inference.reading.dataflow import flow_of
from gradverify.inference.reading.docstrings import documented
from gradverify.inference.reading.intent import phrase
from gradverify.inference.rules.gathers import Gathered, gathered
from gradverify.inference.spec_text import spec_text
from gradverify.results import Report, Status
from gradverify.target.loading import load_target
from tests.inference import runs
from tests.inference.runs import failed_checks

FUNCTIONS = "tests.functions.docstrings"


def zero_config(name: str) -> Report:
    return runs.zero_config(f"{FUNCTIONS}:{name}")


def chosen(name: str) -> dict[str, Choice]:
    return runs.chosen(f"{FUNCTIONS}:{name}")


@pytest.mark.parametrize(
    ("entry", "dims"),
    [
        ("x: (N, C) scores", ("N", "C")),
        ("x : (N, C) tensor", ("N", "C")),
        ("x (Tensor): shape (N, C)", ("N", "C")),
        ("x (torch.Tensor): tensor of shape [B, N, 9]", ("B", "N", "9")),
        ("x: Tensor[N, 3] points", ("N", "3")),
        ("x: (2,) a centre", ("2",)),
        ("x: (N,) class index per row", ("N",)),
        ("x: [K] taps", ("K",)),
        ("x: () the radius", ()),
        ("x: a scalar tensor", ()),
        ("x : Tensor\n    shape (N, D), one row per point", ("N", "D")),
        (":param x: the input, shape (B, T)", ("B", "T")),
    ],
)
def test_a_docstring_entry_gives_the_shape_however_written(
    entry: str, dims: tuple[str, ...]
) -> None:
    assert documented([entry], ["x"])["x"].dims == dims


@pytest.mark.parametrize(
    "entry",
    [
        "x: segment of each row, in [0, num_segments)",
        "x: a probability in [0, 1]",
        "x: position between (0, 1) of the cell",
        "x (Tensor): the values (optional)",
        "x: f(t, y) evaluated",
    ],
)
def test_a_range_of_values_or_a_word_in_brackets_is_no_shape(entry: str) -> None:
    said = documented([entry], ["x"]).get("x")

    assert said is None or said.dims is None


def test_words_of_a_constant_and_an_odd_size_are_read() -> None:
    said = documented(["w: (K,) fixed filter taps, K odd; no gradient"], ["w"])["w"]

    assert (said.dims, said.constant, said.odd) == (("K",), True, frozenset({"K"}))
    assert not documented(["w: (K,) learned weights of fixed size"], ["w"])["w"].constant


def test_a_surrogate_is_declared_by_its_words_not_by_surrogate_loss() -> None:
    assert phrase("Round with a straight-through estimator.") == "straight-through"
    assert phrase("Uses an STE in backward.") == "STE"
    assert phrase("The scale of a surrogate loss.") is None


@pytest.mark.parametrize(
    ("correct", "buggy"),
    [
        ("DistanceToSphere", "DistanceToSphereCentreSign"),
        ("PickedNLL", "PickedNLLForgotMean"),
        ("FixedSmoothing", "FixedSmoothingUnflipped"),
        ("SegmentAverage", "SegmentAverageForgotCount"),
        ("PickedNLLScoresOnly", "PickedNLLScoresOnlyForgotMean"),
    ],
)
def test_the_correct_twin_passes_and_the_buggy_twin_fails(correct: str, buggy: str) -> None:
    passing, failing = zero_config(correct), zero_config(buggy)

    assert failed_checks(passing) == set()
    checked = {r.status for r in passing.results if r.check == "finite_difference"}
    assert checked and checked <= {Status.PASS, Status.WARN}
    assert failed_checks(failing) & {"backward", "finite_difference", "gradcheck"}


def test_docstring_shapes_are_read_and_named_dims_shared_across_parameters() -> None:
    points, centre, radius = chosen("DistanceToSphere").values()
    scores, labels = chosen("PickedNLL").values()

    assert (points.shape, centre.shape, radius.shape) == ((4, 3), (3,), ())
    assert labels.shape == scores.shape[:1] and labels.dtype == "int64"  # N in both


@pytest.mark.parametrize("name", ["PickedNLLScoresOnly", "PickedScoreUndocumented"])
def test_an_index_gathered_along_a_dim_is_as_long_as_the_other_dims(name: str) -> None:
    # labels.unsqueeze(1) gathers along dim 1 of scores: labels as long as its dim 0
    scores, labels = chosen(name).values()

    assert labels.shape == scores.shape[:1] and "gathers from scores" in labels.reason


@pytest.mark.parametrize(
    ("forward", "read"),
    [
        (docstring_functions.gathers_by_torch, Gathered("values", -1)),
        (docstring_functions.takes_along, Gathered("values", None)),
        (docstring_functions.PickedNLL.forward, Gathered("scores", 1)),
    ],
)
def test_the_gather_forms_are_read(forward: object, read: Gathered) -> None:
    parameters = tuple(inspect.signature(forward).parameters)[1:]  # type: ignore[arg-type]
    index = parameters[1]

    assert gathered(flow_of(forward, None, parameters)) == {index: read}


def test_a_number_where_backward_returns_a_tensor_gradient_is_a_failed_guess() -> None:
    # no docstring: a number for centre or radius would make backward's tensor gradient
    # look like a bug of the Function; a 0-d tensor fits
    choices = chosen("DistanceToSphereUndocumented")

    assert all(choice.kind == "tensor" for choice in choices.values())
    assert failed_checks(zero_config("DistanceToSphereUndocumented")) == set()


@pytest.mark.parametrize("name", ["FixedSmoothing", "BufferedSmoothing"])
def test_a_constant_by_its_docstring_or_a_registered_buffer_is_not_differentiated(
    name: str,
) -> None:
    inference = infer(load_target(f"{FUNCTIONS}:{name}"))
    kernel = inference.choices[1]

    assert kernel.requires_grad is False and kernel.shape[0] % 2 == 1  # K odd
    assert "requires_grad: false" in spec_text(inference)
    assert failed_checks(zero_config(name)) == set()


def test_a_range_of_index_values_is_never_read_as_a_shape() -> None:
    values, ids, count = chosen("SegmentAverage").values()

    assert ids.dtype == "int64" and ids.shape == values.shape[:1]
    assert count.kind == "number" and count.value > ids.high


def test_a_declared_straight_through_estimator_is_checked_as_a_surrogate() -> None:
    inference = infer(load_target(f"{FUNCTIONS}:StraightThroughSign"))
    report = zero_config("StraightThroughSign")

    assert inference.surrogate == "its docstring says 'straight-through'"
    assert "gradient: surrogate" in spec_text(inference)
    assert failed_checks(report) == set()
    assert "straight-through" in report.notes[0]
    # the declaration skips value comparisons, never the structural checks
    assert "backward" in failed_checks(zero_config("StraightThroughSignSummed"))
    assert infer(load_target(f"{FUNCTIONS}:SurrogateLossScale")).surrogate is None


def test_warnings_of_the_users_code_on_inference_probes_are_silenced() -> None:
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        infer(load_target(f"{FUNCTIONS}:NoisyTranspose"))

    assert [str(w.message) for w in raised] == []


def test_parameters_listed_on_one_line_each_get_their_own_shape() -> None:
    """`fine: [B, C, H, W], coarse: [B, C, H/2, W/2]`: coarse's shape is its own part of
    the line, arithmetic included, not fine's bracket that starts it."""
    said = documented(
        ["fine: [B, C, H, W], coarse: [B, C, H/2, W/2] (H, W even).  Nearest upsampling."],
        ["fine", "coarse"],
    )
    assert said["fine"].dims == ("B", "C", "H", "W")
    assert said["coarse"].dims == ("B", "C", "H/2", "W/2")
    # the first's part ends where the next begins: a's words are not x's
    said = documented(["x: [N, D] values; a: [D] positive per-channel scale."], ["x", "a"])
    assert said["x"].structure is None and said["a"].structure == "positive"
