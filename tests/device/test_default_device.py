"""Every tensor gradverify makes follows its inputs' device (issue 24): the bundled specs run
with torch's default device set to "meta" while their inputs stay on the CPU, and give the
verdicts they give on the CPU. A tensor made without `device=` lands on meta, where it holds
no data and any arithmetic with a CPU tensor raises, as a CPU tensor would next to CUDA
inputs. `make test-device` runs the engine's, checks' and numerics' tests the same way
(tests/conftest.py, GRADVERIFY_TEST_DEFAULT_DEVICE)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
import torch

from gradverify.catalogue import CATALOGUE
from gradverify.inputs import build_inputs
from gradverify.run import session
from gradverify.spec.load import load_spec_file
from gradverify.spec.models import Case
from tests.conftest import ROOT, working_directory

SPECS = [*sorted((ROOT / "specs").glob("*.yaml")), ROOT / "tests" / "specs" / "bugs.yaml"]


def _verdicts(path: Path, mode: str | None, device: str | None) -> list[tuple[Any, ...]]:
    options = session.RunOptions(isolation=False, cache=False, mode=mode)
    with working_directory(ROOT), torch.device(device) if device else nullcontext():
        report = session.run(load_spec_file(path), options)
    return [(r.target, r.case, r.check, r.status.value, r.message) for r in report.results]


@pytest.fixture(scope="module")
def on_meta() -> dict[tuple[str, str | None], list[tuple[Any, ...]]]:
    """Each bundled spec's verdicts with the default device on meta, as checked below."""
    runs = [(path, None) for path in SPECS] + [(ROOT / "specs" / "examples.yaml", "randomized")]
    return {(path.name, mode): _verdicts(path, mode, "meta") for path, mode in runs}


def test_the_bundled_specs_give_their_cpu_verdicts_with_another_default_device(
    on_meta: dict[tuple[str, str | None], list[tuple[Any, ...]]],
) -> None:
    for (name, mode), verdicts in on_meta.items():
        path = next(p for p in SPECS if p.name == name)
        assert verdicts == _verdicts(path, mode, None), (name, mode)


def test_every_check_ran_with_another_default_device(
    on_meta: dict[tuple[str, str | None], list[tuple[Any, ...]]],
) -> None:
    ran = {check for verdicts in on_meta.values() for _, _, check, status, _ in verdicts
           if status != "skip"}  # fmt: skip
    assert ran == {entry.id for entry in CATALOGUE}
    failed = {check for verdicts in on_meta.values() for _, _, check, status, _ in verdicts
              if status == "fail"}  # fmt: skip
    assert {"finite_difference", "gradcheck", "backward", "layouts"} <= failed


def test_inputs_are_built_on_their_own_device_whatever_the_default() -> None:
    case = Case.model_validate(
        {
            "name": "c",
            "inputs": [{"shape": [3]}, {"values": [1, 2]}, {"shape": [2], "dtype": "bool"}],
        }
    )
    with torch.device("meta"):
        built = build_inputs(case, seed=0)
    assert [tensor.device.type for tensor in built] == ["cpu", "cpu", "cpu"]
    assert torch.equal(built[0], build_inputs(case, seed=0)[0])  # the same values as without
