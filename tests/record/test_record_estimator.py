"""`gradverify record` writes `gradient: approximate` with `samples` and `max_error` into a
new spec where backward draws random numbers of its own (measured on the recorded cases, as
zero-config measures it), so an unbiased stochastic backward passes its recorded spec and
a biased one still fails; a deterministic backward gets no `gradient:` key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.correct import Square
from tests.functions.estimators import SparsifiedSin, SparsifiedSinUnscaled

for fn in (SparsifiedSin, SparsifiedSinUnscaled):
    fn.apply(torch.randn(6, dtype=torch.float64, requires_grad=True)).sum().backward()
Square.apply(torch.randn(5, dtype=torch.float64, requires_grad=True)).sum().backward()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("estimator")
    (project / "script.py").write_text(SCRIPT)
    record(project)
    return project


def test_a_backward_drawing_random_numbers_is_recorded_as_an_estimator(recorded: Path) -> None:
    keys = {
        path.name: {key: spec(recorded, path.name).get(key) for key in ("gradient", "samples")}
        for path in (recorded / "specs").iterdir()
    }
    assert keys["square.yaml"] == {"gradient": None, "samples": None}
    for name in ("sparsified_sin.yaml", "sparsified_sin_unscaled.yaml"):
        assert keys[name]["gradient"] == "approximate", name
        assert isinstance(keys[name]["samples"], int) and keys[name]["samples"] > 1, name
        text = (recorded / "specs" / name).read_text()
        assert "gradient: approximate   # backward draws random numbers" in text


def test_the_unbiased_estimator_passes_its_recorded_spec_and_the_biased_one_fails(
    recorded: Path, run_spec, find
) -> None:
    unbiased = run_spec(recorded / "specs" / "sparsified_sin.yaml")
    assert not find(unbiased, status="fail"), [r.message for r in find(unbiased, status="fail")]
    biased = run_spec(recorded / "specs" / "sparsified_sin_unscaled.yaml")
    assert find(biased, check="finite_difference", status="fail")
