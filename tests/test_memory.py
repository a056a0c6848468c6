"""Tensors too large for memory: a case that cannot fit fails before anything is allocated,
an allocation that fails in the user's code or a check fails that check; never exit 3."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gradverify import memory
from gradverify.cli import app
from gradverify.spec.models import Case

ROOT = Path(__file__).resolve().parents[1]
GB = 10**9

TOO_LARGE_AND_FITTING = """\
target: tests.functions.correct:Square
checks: [forward, backward, finite_difference]
cases:
  - name: huge
    inputs: [{shape: [100000, 100000]}]
  - name: small
    inputs: [{shape: [3]}]
"""


def case(*inputs: Any) -> Case:
    return Case.model_validate({"name": "c", "inputs": list(inputs)})


def test_the_estimate_counts_elements_itemsize_and_gradients() -> None:
    sizes = memory.argument_bytes(
        case(
            {"shape": [1000, 100]},  # float64, requires grad: counted twice
            {"shape": [10], "dtype": "float16"},
            {"shape": [7], "dtype": "int32"},  # no gradient: counted once
            2.5,  # a literal: not counted
            {"shape": [10**6], "device": "meta"},  # not on the CPU: not counted
        )
    )

    assert [(s.index, s.bytes, s.needed) for s in sizes] == [
        (0, 800_000, 1_600_000),
        (1, 20, 40),
        (2, 28, 28),
    ]


def test_a_case_that_fits_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "machine_memory", lambda: 24 * GB)

    assert memory.refusal(case({"shape": [1000, 1000]}), str) is None


def test_a_case_that_cannot_fit_names_its_largest_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "machine_memory", lambda: 24 * GB)

    message = memory.refusal(
        case({"shape": [100000, 100000]}), lambda index: f"argument {index} (x)"
    )

    assert message == (
        "needs 80 GB for argument 0 (x) [100000, 100000] float64, 160 GB with its gradient;"
        " this machine has 24 GB"
    )


def test_a_tensor_that_fits_only_without_its_gradient_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "machine_memory", lambda: 24 * GB)

    assert memory.refusal(case({"shape": [50000, 50000]}), str) is not None  # 20 GB, 40 with grad
    assert memory.refusal(case({"shape": [50000, 50000], "requires_grad": False}), str) is None


def test_machine_memory_is_known_here() -> None:
    assert (memory.machine_memory() or 0) > 100 * 10**6


@pytest.mark.parametrize(
    ("size", "text"),
    [(80 * GB, "80 GB"), (int(1.5 * GB), "1.5 GB"), (200 * 10**6, "200 MB"), (512, "512 bytes")],
)
def test_human_bytes(size: int, text: str) -> None:
    assert memory.human_bytes(size) == text


def test_the_huge_case_fails_and_the_small_one_passes(
    run_spec: Callable[..., Any], find: Callable[..., list[Any]], only: Callable[..., Any]
) -> None:
    report = run_spec(TOO_LARGE_AND_FITTING)

    forward = only(report, case="huge", check="forward")
    assert forward.status.value == "fail"
    assert forward.message.startswith("needs 80 GB for argument 0 (x) [100000, 100000] float64")
    assert "this machine has" in forward.message
    others = find(report, case="huge", status="skip")
    assert [(r.check, r.same_as) for r in others] == [
        ("backward", "forward"),
        ("finite_difference", "forward"),
    ]
    assert [r.status.value for r in find(report, case="small")] == ["pass"] * 3


def test_memory_error_in_forward_fails_the_check(
    run_spec: Callable[..., Any], only: Callable[..., Any]
) -> None:
    report = run_spec(
        """\
        target: tests.functions.memory:RaisesMemoryErrorInForward
        checks: [forward]
        cases: [{name: vector, inputs: [{shape: [3]}]}]
        """
    )

    forward = only(report, check="forward")
    assert forward.status.value == "fail"
    assert forward.message.startswith("forward ran out of memory at tests/functions/memory.py:")
    assert "MemoryError; this machine has" in forward.message


def test_an_impossible_allocation_in_backward_fails_the_check(
    run_spec: Callable[..., Any], only: Callable[..., Any]
) -> None:
    report = run_spec(
        """\
        target: tests.functions.memory:AllocatesTooMuchInBackward
        checks: [forward, backward]
        cases: [{name: vector, inputs: [{shape: [3]}]}]
        """
    )

    assert only(report, check="forward").status.value == "pass"
    backward = only(report, check="backward")
    assert backward.status.value == "fail"
    assert "backward ran out of memory at tests/functions/memory.py:" in backward.message
    assert "tried to allocate 72058 TB; this machine has" in backward.message


def test_an_allocation_failing_in_a_check_fails_that_check(
    monkeypatch: pytest.MonkeyPatch, run_spec: Callable[..., Any], only: Callable[..., Any]
) -> None:
    # A check's own buffers (a Jacobian, float64 copies) can fail to allocate too.
    from gradverify.checks import get_check

    check_class = type(get_check("finite_difference"))

    def out_of_memory(self: Any, context: Any) -> Any:
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 80000000000 bytes."
        )

    monkeypatch.setattr(check_class, "run", out_of_memory)
    report = run_spec(
        """\
        target: tests.functions.correct:Square
        checks: [forward, finite_difference]
        cases: [{name: vector, inputs: [{shape: [3]}]}]
        """
    )

    assert only(report, check="forward").status.value == "pass"
    failed = only(report, check="finite_difference")
    assert failed.status.value == "fail"
    assert failed.message.startswith("ran out of memory: tried to allocate 80 GB; this machine has")


def test_the_cli_exits_1_for_a_case_too_large(tmp_path: Path) -> None:
    spec = tmp_path / "too_large.yaml"
    spec.write_text(TOO_LARGE_AND_FITTING, encoding="utf-8")

    result = CliRunner().invoke(app, ["check", str(spec), "--no-isolation", "--format", "json"])

    assert result.exit_code == 1, result.output


def test_the_console_script_fails_the_case_and_runs_the_others(tmp_path: Path) -> None:
    spec = tmp_path / "too_large.yaml"
    spec.write_text(TOO_LARGE_AND_FITTING, encoding="utf-8")
    script = Path(sys.executable).parent / "gradverify"

    completed = subprocess.run(
        [str(script), "check", str(spec), "--format", "json", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,  # a hang guard only
    )

    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    import json

    results = json.loads(completed.stdout)["results"]
    statuses = {(r["case"], r["check"]): r["status"] for r in results}
    assert statuses[("huge", "forward")] == "fail"
    assert statuses[("small", "forward")] == statuses[("small", "backward")] == "pass"
    huge = next(r for r in results if (r["case"], r["check"]) == ("huge", "forward"))
    assert "needs 80 GB for argument 0 (x) [100000, 100000] float64" in huge["message"]


def test_a_refused_case_says_what_it_stopped_below_the_forward_panel(
    tmp_path: Path, in_repo: Path
) -> None:
    """lint runs before forward, but its 'not run (forward failed above)' line must come
    after the forward panel it points at, in one line with the other stopped checks."""
    spec = tmp_path / "huge.yaml"
    spec.write_text(
        "target: tests.functions.correct:Square\n"
        "cases: [{name: huge, inputs: [{shape: [1000000, 1000000]}]}]\n"
    )
    result = CliRunner().invoke(app, ["check", "--no-cache", str(spec)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    panel = next(i for i, line in enumerate(lines) if "✗ forward" in line)
    stopped = [i for i, line in enumerate(lines) if "not run (forward failed above)" in line]
    stopped += [i for i, line in enumerate(lines) if line.strip().startswith("lint")]
    assert stopped and min(stopped) > panel, result.stdout
    assert sum("failed above" in line for line in lines) == 1, result.stdout
