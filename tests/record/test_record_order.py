"""`gradverify record` keeps an order the code states between two parameters (issue 23):
the cases it adds to a recorded call of a clamp with learnable bounds (`lo < hi`, as its
docstring says) move the clamped tensor past both bounds, never one bound past the other;
the recorded spec then passes the correct clamp and fails its buggy twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.ordered import BoundedClamp, BoundedClampLowGetsAbove

lo = torch.full((4,), -0.5, requires_grad=True)
hi = torch.full((4,), 0.5, requires_grad=True)
for clamp in (BoundedClamp, BoundedClampLowGetsAbove):
    x = (torch.randn(8, 4) * 2).requires_grad_()
    clamp.apply(x, lo, hi).sum().backward()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("ordered")
    (project / "script.py").write_text(SCRIPT)
    record(project)
    return project


def test_every_added_case_keeps_lo_below_hi(recorded: Path) -> None:
    cases = spec(recorded, "bounded_clamp.yaml")["cases"]
    added = [case["name"].split(": ", 1)[1] for case in cases[1:]]

    assert "x in [2, 3]" in added and "x in [-3, -2]" in added
    for case in cases:
        _, lo, hi = case["inputs"]
        assert lo["high"] < hi["low"], case["name"]


def test_the_recorded_spec_passes_the_clamp_and_fails_its_twin(
    recorded: Path, run_spec, find
) -> None:
    correct = run_spec(recorded / "specs" / "bounded_clamp.yaml")
    assert not find(correct, status="fail"), [r.case for r in find(correct, status="fail")]
    buggy = run_spec(recorded / "specs" / "bounded_clamp_low_gets_above.yaml")
    assert {r.input_name for r in find(buggy, status="fail", check="finite_difference")} == {"lo"}
