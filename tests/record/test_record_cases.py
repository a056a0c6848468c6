"""Recorded calls as case inputs: ranges widened but never across a domain's edge, and
shapes shrunk only while forward and backward still accept them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.record.cases import case_name, recorded_case, widened
from gradverify.record.records import Argument, RecordedCall, RecordedTensor
from gradverify.record.shrink import runs_well_formed, shrink
from gradverify.target.loading import load_target


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ((-1.52, 1.43), (-1.55, 1.46)),
        ((0.01, 5.0), (0.005, 5.05)),  # positive stays positive (a log's domain)
        ((0.0, 3.0), (0.0, 3.03)),
        ((-0.99, 0.98), (-1.0, 1.0)),  # inside [-1, 1] stays inside (acos)
        ((0.5, 0.5), (0.5, 0.6)),  # never degenerate
        ((-2.0, -2.0), (-2.2, -2.0)),
    ],
)
def test_widened(recorded: tuple[float, float], expected: tuple[float, float]) -> None:
    assert widened(*recorded) == pytest.approx(expected)


def test_case_name_is_the_call_site() -> None:
    assert case_name("/home/me/proj/train.py:42", Path("/home/me/proj")) == "train_py_42"


def _embedding_call(rows: int) -> RecordedCall:
    weight = RecordedTensor((rows, 4), "float64", True, -1.0, 1.0)
    indices = RecordedTensor((6,), "int64", False, 0, 9, [1, 3, 3, 9, 0, 2], True)
    return RecordedCall("tests.functions.structure_hints:Embedding", "/p/t.py:3",
                        (Argument(tensor=weight), Argument(tensor=indices)))  # fmt: skip


def test_shrinking_keeps_the_rows_the_indices_reach() -> None:
    target = load_target("tests.functions.structure_hints:Embedding")
    case = recorded_case(_embedding_call(4096), "t_py_3", target.parameters, target.defaults)
    small = shrink(target, case, limit=16)
    assert small.inputs[0]["shape"][0] == 16  # index 9 must stay valid: 16 rows, not 8
    assert small.shrunk_from == {0: (4096, 4)}
    assert small.inputs[1] == {"values": [1, 3, 3, 9, 0, 2], "dtype": "int64"}
    assert runs_well_formed(target, small.inputs)
    assert not runs_well_formed(target, [{**small.inputs[0], "shape": [8, 4]}, small.inputs[1]])


def test_a_larger_shape_shrinks_along_a_smaller_ones_path() -> None:
    """`tried` holds each run's answer by shapes: the second case follows the first case's
    halvings without running them again."""
    target = load_target("tests.functions.structure_hints:Embedding")
    tried: dict[str, bool] = {}
    cases = [
        recorded_case(_embedding_call(rows), "t_py_3", target.parameters, target.defaults)
        for rows in (2048, 4096)
    ]
    first = shrink(target, cases[0], limit=16, tried=tried)
    runs = len(tried)
    second = shrink(target, cases[1], limit=16, tried=tried)
    assert len(tried) == runs  # its small halvings were answered already: nothing runs again
    assert first.inputs == second.inputs and second.inputs[0]["shape"] == [16, 1]


def test_a_case_every_halving_accepts_is_shrunk_in_one_small_run() -> None:
    """Where halving the largest dimensions all the way down runs, that one small run is all
    shrinking takes: the recorded [2048, 512] is never run again (seconds for an image)."""
    target = load_target("tests.functions.correct:Square")
    x = RecordedTensor((2048, 512), "float64", True, -1.0, 1.0)
    call = RecordedCall("tests.functions.correct:Square", "/p/t.py:3", (Argument(tensor=x),))
    case = recorded_case(call, "t_py_3", target.parameters, target.defaults)
    tried: dict[str, bool] = {}
    small = shrink(target, case, limit=4096, tried=tried)
    assert small.inputs[0]["shape"] == [64, 64]
    assert small.shrunk_from == {0: (2048, 512)}
    assert len(tried) == 1 and "2048" not in next(iter(tried))


def test_inputs_whose_sizes_go_together_are_halved_together() -> None:
    """A pyramid's levels, fine [512, 512] beside coarse [256, 256]: halving either alone never
    runs, both together do, and that is found from the small end (no run at 512)."""
    target = load_target("tests.functions.recorded:CoarseToFine")
    fine = RecordedTensor((512, 512), "float64", True, -1.0, 1.0)
    coarse = RecordedTensor((256, 256), "float64", True, -1.0, 1.0)
    call = RecordedCall("tests.functions.recorded:CoarseToFine", "/p/t.py:3",
                        (Argument(tensor=fine), Argument(tensor=coarse)))  # fmt: skip
    case = recorded_case(call, "t_py_3", target.parameters, target.defaults)
    tried: dict[str, bool] = {}
    small = shrink(target, case, limit=4096, tried=tried)
    assert [item["shape"] for item in small.inputs] == [[32, 32], [16, 16]]
    assert small.shrunk_from == {0: (512, 512), 1: (256, 256)}
    assert not any("512" in key for key in tried)
