"""Recorded calls summarised into few cases (a loop over a float literal is one case with the
range seen, at most MOST_CASES per target with every call site kept), written readably
(0.3, not 0.30000000000000004), and recording again adds nothing a case stands for already.
The specs are written in this process from calls as probe.py records them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gradverify.record.readable import readable
from gradverify.record.records import Argument, RecordedCall, RecordedTensor
from gradverify.record.run import write_specs
from gradverify.record.summary import grouped

NORMALIZE = "tests.functions.recorded:LpNormalize"
SMOOTH = "tests.functions.recorded:SymmetricSmooth"


def _x(shape: tuple[int, ...] = (3, 5), requires_grad: bool = True) -> Argument:
    return Argument(tensor=RecordedTensor(shape, "float32", requires_grad, -1.5, 1.5))


def _normalize(
    p: float, site: str = "/p/train.py:7", shape: tuple[int, ...] = (3, 5)
) -> RecordedCall:
    return RecordedCall(NORMALIZE, site, (_x(shape), Argument(literal=p)))


def _written(tmp_path: Path, calls: list[RecordedCall], name: str) -> dict:
    write_specs(calls, [], tmp_path / "specs", project=tmp_path)
    return yaml.safe_load((tmp_path / "specs" / name).read_text())


@pytest.mark.parametrize(
    ("recorded", "dtype", "written"),
    [
        (0.1 + 0.2, "float64", 0.3),  # a Python literal
        (0.30000001192092896, "float32", 0.3),  # float32's 0.3, as tolist() gives it
        (0.333984375, "bfloat16", 0.334),
        (0.25, "float32", 0.25),
        (1e-08, "float64", 1e-08),
    ],
)
def test_readable(recorded: float, dtype: str, written: float) -> None:
    assert readable(recorded, dtype) == written


def test_a_loop_over_a_float_literal_is_one_case_with_its_range(tmp_path: Path) -> None:
    values = [2.0 + 0.1 * k for k in range(1, 30)]  # 2.1, 2.2, ... 4.9 (as float sums)
    spec = _written(tmp_path, [_normalize(p) for p in values], "lp_normalize.yaml")
    recorded = [case for case in spec["cases"] if ": " not in case["name"]]
    assert [case["name"] for case in recorded] == ["train_py_7"]
    assert recorded[0]["inputs"][1] == 2.1  # not 2.1000000000000001
    ends = [case for case in spec["cases"] if case["name"] == "train_py_7: p=4.9"]
    assert ends and ends[0]["inputs"][1] == 4.9  # the other end of the range, a case of its own
    text = (tmp_path / "specs" / "lp_normalize.yaml").read_text()
    assert "one of 29 values recorded in [2.1, 4.9]" in text


def test_recording_again_adds_no_case_for_another_value_of_the_literal(tmp_path: Path) -> None:
    _written(tmp_path, [_normalize(2.5)], "lp_normalize.yaml")
    before = (tmp_path / "specs" / "lp_normalize.yaml").read_text()
    [update] = write_specs([_normalize(3.5)], [], tmp_path / "specs", project=tmp_path)
    assert update.path is None and not update.added
    assert (tmp_path / "specs" / "lp_normalize.yaml").read_text() == before


def test_many_shapes_are_capped_keeping_every_call_site() -> None:
    calls = [_normalize(2.0, "/p/a.py:1", (n, 5)) for n in range(2, 16)]
    calls.append(_normalize(2.0, "/p/b.py:9", (99, 5)))  # the last, at a site of its own
    positioned = [(call, list(call.arguments)) for call in calls]
    groups = grouped(positioned, most=10)
    assert len(groups) == 10
    assert "/p/b.py:9" in {group.call.site for group in groups}
    covered = [pattern for group in groups for pattern in group.covers]
    assert sorted(covered) == sorted(call.pattern for call in calls[9:14])


def test_calls_differing_only_in_requires_grad_are_one_case(tmp_path: Path) -> None:
    calls = [
        RecordedCall(NORMALIZE, "/p/t.py:3", (_x(requires_grad=True),)),
        RecordedCall(NORMALIZE, "/p/t.py:3", (_x(requires_grad=False),)),
    ]
    spec = _written(tmp_path, calls, "lp_normalize.yaml")
    assert [case["name"] for case in spec["cases"] if ": " not in case["name"]] == ["t_py_3"]


def test_without_any_gradient_a_constant_is_what_backward_leaves_none(tmp_path: Path) -> None:
    # A forward-only test: nothing required grad, so the run cannot tell data from filter.
    x = RecordedTensor((2, 8), "float32", False, -1.0, 1.0, [[0.5] * 8, [-0.5] * 8])
    kernel = RecordedTensor((3,), "float32", False, 0.25, 0.5, [0.25, 0.5, 0.25])
    call = RecordedCall(SMOOTH, "/p/t.py:5", (Argument(tensor=x), Argument(tensor=kernel)))
    [case] = _written(tmp_path, [call], "symmetric_smooth.yaml")["cases"]
    assert case["inputs"][1] == {
        "values": [0.25, 0.5, 0.25], "dtype": "float32", "requires_grad": False,
    }  # fmt: skip
    assert case["inputs"][0] == {"shape": [2, 8], "dtype": "float32", "low": -1.0, "high": 1.0}


def test_the_head_start_waits_for_a_call_no_spec_holds(tmp_path: Path) -> None:
    from gradverify.record.prewarm import Prewarm
    from gradverify.record.run import _news

    held, new = _normalize(2.5), _normalize(2.5, shape=(4, 6))
    _written(tmp_path, [held], "lp_normalize.yaml")
    records = tmp_path / "calls.jsonl"
    line = '{"target": {"name": "%s"}, "site": "/p/t.py:1", "args": [%s, {"literal": 3.5}]}\n'
    tensor = '{"tensor": {"shape": %s, "dtype": "float32", "requires_grad": true}}'
    records.write_text(line % (NORMALIZE, tensor % "[3, 5]"))  # held: another p, same shapes
    is_new = _news([], tmp_path / "specs", tmp_path)
    watching = Prewarm(records, is_new)
    watching.start()
    watching.join(timeout=1.0)
    assert watching.is_alive() and watching.found is None
    with records.open("a") as file:
        file.write(line % (NORMALIZE, tensor % "[4, 6]"))
    watching.join(timeout=30)
    assert not watching.is_alive()
    assert watching.found is not None and watching.found.pattern == new.pattern
