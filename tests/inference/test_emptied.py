"""A guess on which a slice with literals comes out empty is a less preferred guess
(gradverify.inference.search.emptied, tests/functions/emptied.py): zero-config chooses a size on
which no slice empties, passes the correct twin there and fails the buggy one; a Function
on which nothing empties keeps the guess it had."""

from __future__ import annotations

import pytest
import torch

from gradverify.inference.choice import TENSOR, Choice
from gradverify.inference.search.emptied import enlarged
from gradverify.inference.search.probe import probe
from gradverify.results import Status
from gradverify.target.loading import load_target
from tests.inference import runs
from tests.inference.runs import failed_cases, failed_checks

FUNCTIONS = "tests.functions.emptied"
SLICED = ["HeadScaledByTail", "SplitProduct"]


def at(shape: tuple[int, ...]) -> list[Choice]:
    return [Choice("x", TENSOR, shape)]


@pytest.mark.parametrize(
    ("name", "what"),
    [("HeadScaledByTail", "[..., 4:] of a [4] tensor"), ("SplitProduct", "tensor_split of a [4]")],
)
def test_the_probe_sees_a_slice_come_out_empty(name: str, what: str) -> None:
    target = load_target(f"{FUNCTIONS}:{name}")

    small, large = probe(target, at((4,))), probe(target, at((8,)))

    assert small.stage == large.stage == "done"
    assert small.emptied is not None and what in small.emptied
    assert large.emptied is None
    assert not torch._C._is_torch_function_mode_enabled()  # the watch ends with the probe


def test_a_slice_that_keeps_elements_is_not_emptied() -> None:
    outcome = probe(load_target(f"{FUNCTIONS}:FirstScalesRest"), at((4,)))

    assert (outcome.stage, outcome.emptied) == ("done", None)


def test_small_sizes_grow_alike_and_say_why() -> None:
    choices = [
        Choice("a", TENSOR, (2, 3, 3), reason="a batch"),
        Choice("b", TENSOR, (1, 3, 5)),
        Choice("idx", TENSOR, (3,), dtype="int64"),
    ]

    grown = enlarged(choices, "[..., :-4] of a [2, 3, 3] tensor")

    assert grown is not None
    assert [c.shape for c in grown] == [(6, 7, 7), (1, 7, 9), (3,)]  # a square stays square
    assert grown[0].reason.startswith("a batch; a slice came out empty at [2, 3, 3]")
    assert enlarged([Choice("x", TENSOR, (1, 8))], "") is None  # nothing small to grow
    wide = enlarged([Choice("x", TENSOR, (2, 6)), Choice("y", TENSOR, (3,))], "")
    assert wide is not None and [c.shape for c in wide] == [(7, 6), (8,)]  # none grows into 6


@pytest.mark.parametrize("name", SLICED)
def test_zero_config_chooses_a_size_where_no_slice_empties_and_passes(name: str) -> None:
    x = runs.chosen(f"{FUNCTIONS}:{name}")["x"]
    report = runs.zero_config(f"{FUNCTIONS}:{name}")

    assert x.shape[-1] > 4  # the second part has elements
    assert "a slice came out empty at [4]" in x.reason
    assert failed_checks(report) == set()
    checked = {r.status for r in report.results if r.check == "finite_difference"}
    assert checked == {Status.PASS}


def test_a_guess_that_failed_where_a_slice_came_out_empty_is_tried_enlarged() -> None:
    # every layout and rank has a last dim of 5 at most: forward's max of the tail raises
    inference = runs.inferred(f"{FUNCTIONS}:HeadScaledByTailPeak")
    report = runs.zero_config(f"{FUNCTIONS}:HeadScaledByTailPeak")

    assert inference.stopped is None
    assert inference.choices[0].shape[-1] > 5
    assert failed_checks(report) == set()


def test_the_buggy_twin_fails_on_the_size_chosen() -> None:
    # on x [4] the tail is empty, y is 0 and the tail's wrong gradient never shows
    report = runs.zero_config(f"{FUNCTIONS}:HeadScaledByTailMeanTail")

    assert {"finite_difference", "gradcheck"} <= failed_checks(report)
    assert "inferred" in failed_cases(report)  # the base case, not only a wider extra one


def test_an_extra_case_on_which_a_slice_empties_is_dropped() -> None:
    emptying = runs.inferred(f"{FUNCTIONS}:HeadScaledByTail")
    keeping = runs.inferred(f"{FUNCTIONS}:FirstScalesRest")

    assert "x [2, 3, 4]" not in [label for label, _ in emptying.extra]  # its tail is empty
    assert "x [2, 3, 4]" in [label for label, _ in keeping.extra]


def test_a_function_on_which_nothing_empties_keeps_its_guess() -> None:
    x = runs.chosen(f"{FUNCTIONS}:FirstScalesRest")["x"]

    assert x.shape == (4,)
    assert "empty" not in x.reason


def test_where_a_slice_empties_on_every_guess_the_first_guess_is_kept() -> None:
    inference = runs.inferred(f"{FUNCTIONS}:BeyondEveryGuess")

    assert inference.ran
    assert [c.shape for c in inference.choices] == [(4,)]
