"""Branch points in the functions forward and backward call (issue 23, inference that
reaches the branches): a comparison in a module-level helper, or in a kernel launched as
`kernel[grid](...)` (a `@triton.jit` one is plain Python source), is crossed by the
inferred inputs as forward's own is. Each buggy twin (tests/functions/called_helpers.py)
is wrong only below x = -2; its correct twin passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradverify.inference.reading.called import called_helpers, helper_points
from gradverify.inference.reading.dataflow import target_flow
from gradverify.inference.reading.source import branch_points
from gradverify.inference.rules.branches import compared_groups, target_helpers
from gradverify.results import Report, Status
from gradverify.target.loading import load_target
from tests.functions import called_helpers as functions
from tests.inference import runs

MODULE = "tests.functions.called_helpers"


def failures(report: Report) -> list[tuple[str, str | None]]:
    return [(r.case, r.input_name) for r in report.results if r.status is Status.FAIL]


def test_a_helper_s_comparison_is_a_branch_point_the_function_s_own_source_lacks() -> None:
    knee = functions.HelperKneeFlat

    assert branch_points(knee.forward, knee.backward).magnitudes == ()
    assert helper_points(knee.forward, knee.backward, ("x",)).magnitudes == (2.0,)


def test_a_kernel_named_by_a_string_and_launched_with_a_grid_is_followed() -> None:
    dropped = functions.KernelSiLUDroppedTerm

    followed = {h.node.name for h in called_helpers(dropped.forward, dropped.backward, ("x",))}

    assert {"silu_forward", "silu_backward_dropped_term", "_launch_backward"} <= followed
    assert "silu_backward" not in followed  # only the kernel this backward names
    assert helper_points(dropped.forward, dropped.backward, ("x",)).magnitudes == (2.0,)


@pytest.mark.parametrize(
    ("buggy", "correct"),
    [
        ("HelperKneeFlat", "HelperKnee"),
        ("MethodKneeFlat", "MethodKnee"),
        ("KernelSiLUDroppedTerm", "KernelSiLU"),
    ],
)
def test_zero_config_crosses_a_branch_only_a_called_function_holds(
    buggy: str, correct: str
) -> None:
    found = failures(runs.zero_config(f"{MODULE}:{buggy}", seed=0))

    assert found, "the bug below x = -2 was missed"
    assert {name for _, name in found} == {"x"}
    assert all("[-5, 5]" in case for case, _ in found)  # the wide case, past -2
    assert failures(runs.zero_config(f"{MODULE}:{correct}", seed=0)) == []


def test_a_helper_s_literal_is_mapped_to_the_input_its_compared_value_derives_from() -> None:
    gate = functions.ColumnGateFlat

    points = helper_points(gate.forward, gate.backward, ("x", "t"))

    assert points.by_input == frozenset({("t", 2.0)})  # _gate(t), t from ctx.saved_tensors


def test_zero_config_widens_an_input_shaped_unlike_the_first_when_a_helper_compares_it() -> None:
    found = failures(runs.zero_config(f"{MODULE}:ColumnGateFlat", seed=0))

    assert found, "the bug below t = -2 was missed"
    assert {name for _, name in found} == {"t"}
    assert all("t [4] in [-5, 5]" in case for case, _ in found)
    assert failures(runs.zero_config(f"{MODULE}:ColumnGate", seed=0)) == []


def test_a_comparison_between_inputs_inside_a_helper_is_seen() -> None:
    box = load_target(f"{MODULE}:HelperBoxSDF")

    groups = compared_groups(target_flow(box), helpers=target_helpers(box))

    assert compared_groups(target_flow(box)) == []  # forward and backward compare nothing
    assert groups == [frozenset({"p", "half_extents"})]


def test_zero_config_reaches_both_sides_of_a_comparison_only_a_helper_holds() -> None:
    found = failures(runs.zero_config(f"{MODULE}:HelperBoxSDFInsideSign", seed=0))

    assert ("inferred: half_extents in [2, 3]", "p") in found  # every point inside the box
    assert failures(runs.zero_config(f"{MODULE}:HelperBoxSDF", seed=0)) == []


READ_NOT_IMPORTED = """
import sys
from gradverify.examples.triton_kernels import TritonSiLUDroppedTerm as f
from gradverify.inference.reading.called import helper_points
print(helper_points(f.forward, f.backward, ('x',)).magnitudes)
print("triton" in sys.modules, "gradverify.examples.triton_kernels.silu" in sys.modules)
"""


def test_a_kernel_module_is_read_from_its_file_never_imported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", READ_NOT_IMPORTED], capture_output=True, text=True, timeout=120
    )

    magnitudes, modules = done.stdout.splitlines()
    assert magnitudes == "(1.0,)"  # silu_backward_dropped_term's x < -1.0
    assert modules == "False False"  # neither triton nor the kernels' module


def _triton_zero_config(name: str) -> dict[str, object]:
    """`gradverify check` on a Triton example with no spec, under Triton's interpreter."""
    target = f"gradverify.examples.triton_kernels:{name}"
    environment = {**os.environ, "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "gradverify", "check", target, "--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    report: dict[str, object] = json.loads(done.stdout)
    report["exit"] = done.returncode
    return report


def test_zero_config_reaches_the_branch_of_a_triton_kernel() -> None:
    pytest.importorskip("triton")

    dropped = _triton_zero_config("TritonSiLUDroppedTerm")
    correct = _triton_zero_config("TritonSiLU")

    assert dropped["exit"] == 1
    results = dropped["results"]
    assert isinstance(results, list)
    assert {r["input_name"] for r in results if r["status"] == "fail"} == {"x"}
    assert correct["exit"] == 0
