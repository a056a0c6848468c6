"""`gradverify record` keeps the contract the run showed and adds what it did not: a constant
filter stays the filter it was, float literals looped over are one case with the range seen,
and the literals a run left to their defaults get the other values that reach a bug. The
recorded specs are then checked, in this process: the correct Functions pass, their buggy
twins fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.recorded import (
    LpNormalize, LpNormalizeAssumesP2, LpNormalizeForgotEps, LpNormalizeLastDim,
    SymmetricSmooth, SymmetricSmoothWrapsAround,
)
from tests.functions.structure_hints import Embedding

kernel = torch.tensor([0.25, 0.5, 0.25])  # a buffer: no grad
for smooth in (SymmetricSmooth, SymmetricSmoothWrapsAround):
    x = torch.randn(4, 16, requires_grad=True)
    smooth.apply(x, kernel).sum().backward()
for normalize in (LpNormalize, LpNormalizeAssumesP2, LpNormalizeForgotEps, LpNormalizeLastDim):
    x = torch.randn(3, 5, requires_grad=True)
    normalize.apply(x).sum().backward()  # p=2, dim=-1, eps=1e-8: the defaults only
table = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
Embedding.apply(table, torch.arange(100) % 7)  # a long index tensor: its values, not a range
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("contract")
    (project / "script.py").write_text(SCRIPT)
    record(project)
    return project


def test_a_constant_filter_is_kept_as_its_values(recorded: Path) -> None:
    [case] = spec(recorded, "symmetric_smooth.yaml")["cases"]
    assert case["inputs"][1] == {
        "values": [0.25, 0.5, 0.25], "dtype": "float32", "requires_grad": False,
    }  # fmt: skip
    assert case["inputs"][0]["shape"] == [4, 16]  # the data stays a draw


def test_a_long_index_tensor_is_kept_as_its_values(recorded: Path) -> None:
    case = spec(recorded, "embedding.yaml")["cases"][0]
    assert case["inputs"][1] == {"values": [i % 7 for i in range(100)], "dtype": "int64"}


def test_the_filter_spec_passes_the_correct_function_only(recorded: Path, run_spec, find) -> None:
    correct = run_spec(recorded / "specs" / "symmetric_smooth.yaml")
    assert not find(correct, status="fail"), [r.message for r in find(correct, status="fail")]
    assert find(correct, status="pass")
    buggy = run_spec(recorded / "specs" / "symmetric_smooth_wraps_around.yaml")
    failed = find(buggy, status="fail")
    assert failed and {result.input_index for result in failed} == {0}


def test_defaults_the_run_left_alone_get_other_values(recorded: Path) -> None:
    names = [case["name"] for case in spec(recorded, "lp_normalize.yaml")["cases"]]
    assert names[0] == "script_py_14"  # the recorded case first, as the run made it
    assert {"script_py_14: p=4.0", "script_py_14: eps=0.5", "script_py_14: dim=0"} <= set(names)


@pytest.mark.parametrize(
    ("spec", "failing_case"),
    [
        ("lp_normalize_assumes_p2.yaml", "script_py_14: p=4.0"),
        ("lp_normalize_forgot_eps.yaml", "script_py_14: eps=0.5"),
        ("lp_normalize_last_dim.yaml", "script_py_14: dim=0"),
    ],
)
def test_added_cases_catch_what_the_defaults_hide(
    recorded: Path, run_spec, find, spec: str, failing_case: str
) -> None:
    report = run_spec(recorded / "specs" / spec)
    failed_cases = {result.case for result in find(report, status="fail")}
    first_order = {result.check for result in find(report, status="fail", case=failing_case)}
    assert first_order - {"gradgradcheck"}, first_order  # the gradient itself is wrong there
    assert "script_py_14" not in failed_cases  # the run's own case hides the bug


def test_added_cases_pass_the_correct_function(recorded: Path, run_spec, find) -> None:
    report = run_spec(recorded / "specs" / "lp_normalize.yaml")
    assert len({result.case for result in report.results}) >= 4
    assert not find(report, status="fail"), [r.message for r in find(report, status="fail")]
