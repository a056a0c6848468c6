"""Index tensors that fit what they index and pair with, counts that cover them, and
repeats on every seed (issue 23): a segment sum and a gather that loses repeated indices,
each with its correct twin (tests/functions/indices.py)."""

from __future__ import annotations

import pytest

from gradverify.inference.from_signature import Inference, infer
from gradverify.inference.reading.dataflow import flow_of
from gradverify.inference.rules.indices import counts, pairs, read_partners
from gradverify.results import Report
from gradverify.run import session
from gradverify.run.session import RunOptions
from gradverify.spec.load import SpecEntry
from gradverify.target.loading import load_target
from tests.functions import indices, table_reads
from tests.inference import runs
from tests.inference.runs import failed_cases

MODULE = "tests.functions.indices"


def inferred(name: str) -> Inference:
    return runs.inferred(f"{MODULE}:{name}")


def zero_config(name: str, seed: int | None = None) -> Report:
    return runs.zero_config(f"{MODULE}:{name}", seed)


def test_an_index_added_with_a_source_pairs_with_it_along_the_dim() -> None:
    segment_sum = indices.SegmentSum
    flow = flow_of(segment_sum.forward, None, ("values", "segment_ids", "num_segments"))

    assert pairs(flow) == {"segment_ids": ("values", 0)}


def test_a_parameter_forward_allocates_with_counts_the_index_values() -> None:
    segment_sum = indices.SegmentSum
    flow = flow_of(segment_sum.forward, None, ("values", "segment_ids", "num_segments"))

    assert counts(flow) == {"num_segments"}


def test_segment_ids_as_long_as_values_repeating_and_a_count_that_covers_them() -> None:
    values, ids, count = inferred("SegmentSum").choices

    assert ids.shape == values.shape == (4,)
    assert (ids.dtype, ids.low, ids.high) == ("int64", 0, 2)  # 4 ids of 3 values: one repeats
    assert count.value == 3


def test_the_pairing_holds_in_the_other_cases() -> None:
    for _, (values, ids, count) in inferred("SegmentSum").cases:
        assert ids.shape == values.shape[:1]
        # fewer values than ids, but 0..1 at least: a spec's range needs low < high
        assert count.value == ids.high + 1 and ids.high <= max(1, ids.shape[0] - 2)


def test_a_right_segment_sum_passes_zero_config() -> None:
    report = zero_config("SegmentSum")

    assert report.passed
    assert report.summary.cases >= 2


def test_a_wrong_segment_sum_fails_zero_config() -> None:
    assert not zero_config("SegmentSumFirstRow").passed


def test_the_suggested_spec_is_valid_for_the_segment_sum() -> None:
    # the spec zero-config runs is the one `init` writes: ids in range, count covering them
    spec = inferred("SegmentSum").spec()
    entry = SpecEntry(spec=spec, file=None)

    assert session.run([entry], RunOptions(isolation=False, cache=False)).passed


def test_a_free_length_index_gets_a_case_long_enough_to_repeat() -> None:
    extra = dict(inferred("Gather").extra)

    idx = extra["idx [4]"][1]
    assert (idx.shape, idx.high) == ((4,), 2)  # 4 indices of 3 rows: one repeats


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_gather_that_loses_repeats_fails_on_every_seed(seed: int) -> None:
    report = zero_config("GatherLosesRepeats", seed)

    assert "inferred: idx [4]" in failed_cases(report)


def test_a_gather_that_accumulates_passes() -> None:
    assert zero_config("Gather").passed


def test_an_index_put_with_accumulate_pairs_its_indices_with_the_values() -> None:
    values, ids, count = inferred("SegmentSumIndexPut").choices

    assert (ids.dtype, ids.shape, count.value) == ("int64", values.shape, ids.high + 1)
    assert zero_config("SegmentSumIndexPut").passed


# --- an index that reads a table beside a tensor of its length (tests/functions/table_reads.py)

READS = "tests.functions.table_reads"


def zero_config_of(name: str, seed: int | None = None) -> Report:
    return runs.zero_config(f"{READS}:{name}", seed)


def test_an_index_reading_a_table_pairs_with_what_its_rows_are_combined_with() -> None:
    interpolation = table_reads.Interp1d
    flow = flow_of(interpolation.forward, None, ("table", "idx", "frac"))
    lookup = table_reads.ScaledLookup
    selected = flow_of(lookup.forward, None, ("table", "idx", "weight"))

    assert read_partners(flow) == {"idx": ("table", ("frac",))}
    assert read_partners(selected) == {"idx": ("table", ("weight",))}


@pytest.mark.parametrize("name", ["Interp1d", "ScaledLookup"])
def test_the_index_and_its_partner_share_a_length_of_4_or_more_and_it_repeats(name: str) -> None:
    inference = infer(load_target(f"{READS}:{name}"))
    table, idx, partner = inference.choices

    assert idx.shape == partner.shape and idx.shape[0] >= 4
    assert idx.high <= idx.shape[0] - 2 and idx.high < table.shape[0]  # a repeat, valid
    for _, (table, idx, partner) in inference.cases:
        if len(table.shape) == 1:
            assert idx.shape == partner.shape and idx.high <= idx.shape[0] - 2


@pytest.mark.parametrize("name", ["Interp1dLosesRepeats", "ScaledLookupLosesRepeats"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_table_read_that_loses_repeats_fails_on_every_seed(name: str, seed: int) -> None:
    report = zero_config_of(name, seed)

    assert "inferred" in failed_cases(report)  # the base case, not only an extra one


@pytest.mark.parametrize("name", ["Interp1d", "ScaledLookup"])
def test_a_table_read_that_accumulates_passes(name: str) -> None:
    assert zero_config_of(name).passed


def test_no_shape_forward_ran_on_is_said_to_be_rejected() -> None:
    choices = infer(load_target(f"{READS}:Interp1d")).choices

    assert not any("rejects" in choice.reason for choice in choices)


def test_a_segment_index_pairs_with_a_source_long_enough_to_repeat() -> None:
    values, ids, count = infer(load_target(f"{READS}:SegmentMean")).choices

    assert ids.shape == values.shape[:1] and ids.shape[0] >= 4
    assert ids.high <= ids.shape[0] - 2 and count.value == ids.high + 1


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_segment_mean_without_its_count_fails_on_every_seed(seed: int) -> None:
    assert not zero_config_of("SegmentMeanNoCount", seed).passed


def test_a_right_segment_mean_passes() -> None:
    assert zero_config_of("SegmentMean").passed


def test_a_tensor_made_0_d_says_what_forward_raised_with() -> None:
    x, s = infer(load_target(f"{READS}:ScaleByScalar")).choices

    assert (x.shape, s.shape) == ((4,), ())
    assert s.reason == "forward raised with it at [4]"


def test_a_0_d_tensor_beside_a_table_read_stays_0_d_and_passes() -> None:
    inference = infer(load_target(f"{READS}:LookupTimesScalar"))

    assert all(scale.shape == () for _, (_, _, scale) in inference.cases)
    assert len(inference.cases) >= 2
    assert zero_config_of("LookupTimesScalar").passed


def test_gather_and_take_read_a_table_too() -> None:
    gathered = table_reads.GatherTimesWeight
    flow = flow_of(gathered.forward, None, ("table", "idx", "weight"))

    assert read_partners(flow) == {"idx": ("table", ("weight",))}
    assert zero_config_of("GatherTimesWeight").passed
