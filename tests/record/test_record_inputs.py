"""`gradverify record` writes what a run passed in a form that keeps the Function's contract:
a callable as `{callable: module:attr}` (or, where no name imports it, a reason and the
other calls' specs), a matrix or rows with structure as the `structure:` its values had (or
their values where no structure keeps them all), a module's buffer as its values. The
recorded specs are then checked in this process: correct Functions pass, buggy twins fail."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gradverify.record.probe import _structure
from gradverify.record.structure import drawn_structure
from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.recorded import SymmetricSmooth
from tests.functions.recorded_contracts import (
    MapElementwise, MapElementwiseAsIdentity, Renormalize, RenormalizeDropsMean,
    SPDSolve, SPDSolveTransposed, softsign,
)


def own_activation(x):  # in the script itself: no import reaches it
    return x.sin()


class Smoother(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("kernel", torch.tensor([0.25, 0.5, 0.25]))

    def forward(self, x):
        return SymmetricSmooth.apply(x, self.kernel)


torch.manual_seed(0)
x = torch.randn(5, 3, requires_grad=True)
for mapped in (MapElementwise, MapElementwiseAsIdentity):
    mapped.apply(x, torch.tanh).sum().backward()
MapElementwise.apply(x, softsign).sum().backward()
MapElementwise.apply(x, lambda v: v * v).sum().backward()
MapElementwise.apply(x, own_activation).sum().backward()
M = torch.randn(4, 4)
A = (M @ M.T + 4 * torch.eye(4)).requires_grad_()
b = torch.randn(4, 2, requires_grad=True)
for solve in (SPDSolve, SPDSolveTransposed):
    solve.apply(A, b).sum().backward()
D = torch.diag(torch.tensor([1.0, 2.0, 3.0])).requires_grad_()
SPDSolve.apply(D, b[:3]).sum().backward()  # symmetric, SPD and triangular at once
p = torch.randn(3, 5).softmax(-1).requires_grad_()
for renormalize in (Renormalize, RenormalizeDropsMean):
    renormalize.apply(p).sum().backward()
Smoother()(torch.randn(2, 8, requires_grad=True)).sum().backward()
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    project = tmp_path_factory.mktemp("inputs")
    (project / "script.py").write_text(SCRIPT)
    return project, record(project).stdout


def _cases(project: Path, name: str) -> list[dict]:
    return spec(project, name)["cases"]


def _recorded_inputs(project: Path, name: str) -> list[list]:
    return [case["inputs"] for case in _cases(project, name) if ": " not in case["name"]]


def test_a_callable_is_written_by_the_name_that_imports_it(recorded: tuple[Path, str]) -> None:
    project, _ = recorded
    callables = [inputs[1] for inputs in _recorded_inputs(project, "map_elementwise.yaml")]
    assert callables == [
        {"callable": "torch:tanh"},
        {"callable": "tests.functions.recorded_contracts:softsign"},
    ]


def test_a_callable_no_name_imports_is_a_reason_not_a_crash(recorded: tuple[Path, str]) -> None:
    _, output = recorded
    skipped = [line for line in output.splitlines() if "skipped" in line]
    assert len(skipped) == 2, output
    assert all("MapElementwise" in line for line in skipped)
    assert "fn is a lambda" in skipped[0]
    assert "fn is a function of the script itself (own_activation)" in skipped[1]
    assert "{callable: module:attr}" in skipped[0]
    assert "wrote specs/spd_solve.yaml" in output  # the other Functions' specs are written


def test_the_callable_spec_passes_the_correct_function_only(
    recorded: tuple[Path, str], run_spec, find
) -> None:
    project, _ = recorded
    correct = run_spec(project / "specs" / "map_elementwise.yaml")
    assert not find(correct, status="fail"), [r.message for r in find(correct, status="fail")]
    assert {result.case for result in find(correct, status="pass")} >= {"script_py_25"}
    buggy = run_spec(project / "specs" / "map_elementwise_as_identity.yaml")
    assert {result.input_index for result in find(buggy, status="fail")} == {0}


def test_an_spd_matrix_is_drawn_spd_and_a_diagonal_one_kept(recorded: tuple[Path, str]) -> None:
    project, _ = recorded
    spd, diagonal = _recorded_inputs(project, "spd_solve.yaml")
    assert spd[0] == {"shape": [4, 4], "dtype": "float32", "structure": "spd"}
    assert diagonal[0]["values"] == [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
    assert "requires_grad" not in diagonal[0]  # still differentiated
    added = [case for case in _cases(project, "spd_solve.yaml") if ": " in case["name"]]
    assert all(case["inputs"][0].get("structure") == "spd" for case in added)


def test_the_spd_spec_passes_the_correct_function_only(
    recorded: tuple[Path, str], run_spec, find
) -> None:
    project, _ = recorded
    correct = run_spec(project / "specs" / "spd_solve.yaml")
    assert not find(correct, status="fail"), [r.message for r in find(correct, status="fail")]
    assert not find(correct, status="error"), [r.message for r in find(correct, status="error")]
    buggy = run_spec(project / "specs" / "spd_solve_transposed.yaml")
    assert {result.input_index for result in find(buggy, status="fail")} == {0}


def test_simplex_rows_stay_on_the_simplex(recorded: tuple[Path, str], run_spec, find) -> None:
    project, _ = recorded
    [inputs] = _recorded_inputs(project, "renormalize.yaml")
    assert inputs[0] == {"shape": [3, 5], "dtype": "float32", "structure": "simplex"}
    correct = run_spec(project / "specs" / "renormalize.yaml")
    assert not find(correct, status="fail"), [r.message for r in find(correct, status="fail")]
    assert find(run_spec(project / "specs" / "renormalize_drops_mean.yaml"), status="fail")


def test_a_module_buffer_is_kept_as_its_values(recorded: tuple[Path, str]) -> None:
    project, _ = recorded
    [inputs] = _recorded_inputs(project, "symmetric_smooth.yaml")
    assert inputs[1] == {"values": [0.25, 0.5, 0.25], "dtype": "float32", "requires_grad": False}


def _orthogonal() -> torch.Tensor:
    return torch.linalg.qr(torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0)))[0]


@pytest.mark.parametrize(
    ("values", "found"),
    [
        (torch.tensor([[2.0, 1.0], [1.0, 3.0]]), ["positive", "symmetric", "spd"]),
        (torch.tensor([[1.0, 2.0], [2.0, 1.0]]), ["positive", "symmetric"]),  # not definite
        (torch.tensor([[1.0, 0.0], [-2.0, 3.0]]), ["lower"]),
        (torch.tensor([[1.0, -2.0], [0.0, 3.0]], dtype=torch.float64), ["upper"]),
        (torch.eye(3), ["simplex", "symmetric", "spd", "lower", "upper", "orthogonal"]),
        (_orthogonal(), ["orthogonal"]),
        (torch.tensor([[0.2, 0.8], [0.5, 0.5]]), ["positive", "simplex"]),
        (torch.tensor([[1.0, -2.0], [0.5, 3.0]]), []),
        (torch.tensor([0.0, 0.0]), []),
    ],
)
def test_the_structure_of_recorded_values(values: torch.Tensor, found: list[str]) -> None:
    assert _structure(values) == found


@pytest.mark.parametrize(
    ("properties", "low", "drawn"),
    [
        (["symmetric", "spd"], -5.0, (True, "spd")),
        (["symmetric"], -1.0, (True, "symmetric")),
        (["positive", "symmetric"], 0.5, (True, "symmetric")),  # the range keeps it positive
        (["positive", "symmetric", "spd"], 0.5, (False, None)),  # no draw keeps all: values
        (["symmetric", "spd", "lower", "upper"], 0.0, (False, None)),
        (["positive", "simplex"], 0.1, (True, "simplex")),
        (["positive"], 0.1, (True, None)),
        ([], -1.0, (True, None)),
    ],
)
def test_the_structure_a_draw_needs(properties: list[str], low: float, drawn: tuple) -> None:
    assert drawn_structure(properties, low) == drawn
