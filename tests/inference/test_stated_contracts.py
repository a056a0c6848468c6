"""The contract from the code that states it (issue 28 item 2): a docstring's dtype word
makes an integer index, a docstring's `[0, num_segments)` makes num_segments a count that
covers the indices (even where forward allocates with it in a helper), and forward's own
error asking for integer indices makes the parameter named like one an index."""

from __future__ import annotations

from gradverify.inference.reading.docstrings import bounding, documented
from gradverify.inference.rules.plans import as_indices, plans_of
from gradverify.results import Status
from gradverify.target.loading import load_target
from tests.inference.runs import chosen, zero_config

FUNCTIONS = "tests.functions.stated_contracts"


def test_a_docstring_dtype_and_range_give_an_index_and_its_count() -> None:
    said = documented(["segment_ids: [N] int64, each in [0, num_segments)."], ["segment_ids"])
    assert said["segment_ids"].integer
    assert not documented(["data: [N, D] float tensor."], ["data"])["data"].integer
    assert bounding(["ids in ``[0, num_segments)``"], ["ids", "num_segments"]) == {"num_segments"}

    choices = chosen(f"{FUNCTIONS}:SegmentTotal")
    ids, count = choices["segment_ids"], choices["num_segments"]
    assert ids.dtype == "int64"
    assert count.kind == "number" and count.value > ids.high


def test_the_correct_twin_passes_and_the_halved_one_fails() -> None:
    assert zero_config(f"{FUNCTIONS}:SegmentTotal", explore=0).passed
    halved = zero_config(f"{FUNCTIONS}:SegmentTotalHalved", explore=0)
    assert any(r.check == "finite_difference" and r.status is Status.FAIL for r in halved.results)


def test_forward_asking_for_integer_indices_makes_the_index_named_one() -> None:
    plans = plans_of(load_target(f"{FUNCTIONS}:ScatterRows"))
    error = "RuntimeError: scatter(): Expected dtype int32/int64 for index"

    assert [p.indices for p in as_indices(plans, error)] == [False, True]
    assert as_indices(plans, "RuntimeError: size mismatch") == list(plans)
    assert chosen(f"{FUNCTIONS}:ScatterRows")["index"].dtype == "int64"
    assert zero_config(f"{FUNCTIONS}:ScatterRows", explore=0).passed


def test_an_axis_forward_reads_by_its_components_is_as_wide_as_it_reads() -> None:
    shapes = [choices[0].shape for _, choices in inferred_cases(f"{FUNCTIONS}:PairModulus")]
    assert shapes and all(shape[-1] == 2 for shape in shapes)
    assert zero_config(f"{FUNCTIONS}:PairModulus", explore=0).passed


def inferred_cases(target: str) -> list:
    from tests.inference.runs import inferred

    found = inferred(target)
    return [("base", found.choices), *found.cases]
