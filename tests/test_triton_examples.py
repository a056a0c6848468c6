"""The bundled Triton examples (gradverify/examples/triton_kernels/, specs_triton/) and a
package of Triton kernels, checked on the CPU through Triton's interpreter.

Triton reads TRITON_INTERPRET when a kernel is decorated, so every run that launches a
kernel is a `gradverify` subprocess started with TRITON_INTERPRET=1: this process never
imports the kernels. The tests that launch kernels skip where triton is not installed
(`pip install 'gradverify[triton]'`); the others run everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from gradverify.examples.triton_kernels import TritonSiLU
from gradverify.spec.load import load_spec_file

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs_triton"
CORRECT = "gradverify.examples.triton_kernels:TritonSiLU"
BUGGY = "gradverify.examples.triton_kernels:TritonSiLUDroppedTerm"
KERNEL_FUNCTION = "tests.functions.triton_pkg.kernels:TripleKernel"
KERNEL_OP = "tests.functions.triton_pkg.ops:triton_pkg::triple"


def check_interpreted(*arguments: str) -> tuple[int, dict[str, Any]]:
    """`gradverify check ARGUMENTS --format json` in a subprocess, kernels interpreted."""
    pytest.importorskip("triton")
    environment = {**os.environ, "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "gradverify", "check", *arguments]
    done = subprocess.run(
        [*command, "--format", "json", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr + done.stdout
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def silu_run() -> tuple[int, dict[str, Any]]:
    return check_interpreted("specs_triton/")


def results_of(
    report: dict[str, Any], target: str, spec: str | None = None
) -> list[dict[str, Any]]:
    """The results of `target`, from the spec file named `spec` where one is given."""
    return [
        result
        for result in report["results"]
        if result["target"] == target and (spec is None or result["spec_file"].endswith(spec))
    ]


def test_the_correct_triton_silu_passes_against_its_reference(
    silu_run: tuple[int, dict[str, Any]],
) -> None:
    _, report = silu_run
    results = results_of(report, CORRECT, "silu.yaml")

    assert {(r["case"], r["check"]) for r in results} == {
        (case, check)
        for case in ("float32", "float32_two_blocks", "float16", "bfloat16")
        for check in ("forward", "backward", "reference")
    }
    assert [r for r in results if r["status"] != "pass"] == []


def test_the_triton_silu_with_a_dropped_term_fails_naming_x(
    silu_run: tuple[int, dict[str, Any]],
) -> None:
    code, report = silu_run
    results = results_of(report, BUGGY, "silu.yaml")
    failed = [r for r in results if r["status"] == "fail"]

    assert code == 1
    assert [(r["case"], r["check"], r["input_index"], r["input_name"]) for r in failed] == [
        ("float32", "reference", 0, "x"),
        ("float16", "reference", 0, "x"),
    ]
    for finding in failed:
        # Only the elements below -1 are wrong: about 3 in 8 of a draw from -4..4.
        assert 0 < finding["mismatched"] < finding["total"]
        assert finding["max_abs_error"] > 0.1


# With the default checks, no reference: the kernels refuse float64, so finite_difference
# checks them in float32.


def test_the_correct_triton_silu_passes_the_default_checks_in_float32(
    silu_run: tuple[int, dict[str, Any]],
) -> None:
    _, report = silu_run
    results = results_of(report, CORRECT, "silu_own_precision.yaml")

    assert [r for r in results if r["status"] == "fail"] == []
    passed = {r["check"] for r in results if r["status"] == "pass"}
    assert {"forward", "backward", "finite_difference"} <= passed


def test_the_dropped_term_fails_finite_difference_in_float32_naming_x(
    silu_run: tuple[int, dict[str, Any]],
) -> None:
    _, report = silu_run
    results = results_of(report, BUGGY, "silu_own_precision.yaml")
    failed = [r for r in results if r["status"] == "fail"]

    assert [(r["check"], r["input_index"], r["input_name"]) for r in failed] == [
        ("finite_difference", 0, "x")
    ]
    assert any("float32" in note for note in failed[0]["notes"])


def test_a_package_of_triton_kernels_is_found_as_any_other() -> None:
    """`gradverify check DIR` on a package whose Function and custom op launch Triton
    kernels: both are discovered (read from the source) and checked."""
    _, report = check_interpreted("tests/functions/triton_pkg/")

    coverage = report["coverage"]
    assert coverage["functions"] == 2 and coverage["custom_ops"] == 1  # the op counts in both
    assert coverage["inferred"] == [KERNEL_FUNCTION, KERNEL_OP]
    function_results = results_of(report, KERNEL_FUNCTION)
    assert {r["check"] for r in function_results} >= {"forward", "backward", "finite_difference"}
    assert [r for r in function_results if r["status"] == "fail"] == []
    assert "pass" in {r["status"] for r in function_results}
    # The op's own verdicts are not asserted: under the interpreter, torch's wrap_triton hands
    # back the interpreted kernel untraced, so opcheck's fake-tensor tests run it on meta
    # tensors and fail; on a GPU they trace it.
    assert results_of(report, KERNEL_OP) != []


# What runs without triton: the spec, the module's import, the launcher's own refusals.


def test_the_triton_specs_are_valid() -> None:
    with_reference = load_spec_file(SPECS / "silu.yaml")
    own_precision = load_spec_file(SPECS / "silu_own_precision.yaml")

    assert [(e.spec.target, [c.name for c in e.spec.cases]) for e in with_reference] == [
        (CORRECT, ["float32", "float32_two_blocks", "float16", "bfloat16"]),
        (BUGGY, ["float32", "float16"]),
    ]
    assert [e.spec.target for e in own_precision] == [CORRECT, BUGGY]


def test_importing_the_examples_never_imports_triton(
    fresh_python: Callable[[str], str],
) -> None:
    imported = fresh_python(
        "import sys, gradverify, gradverify.examples.triton_kernels; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'triton'))"
    )

    assert imported == "[]"


def test_the_kernels_refuse_float64_as_kernels_do() -> None:
    with pytest.raises(TypeError, match=r"float16/bfloat16/float32, got torch\.float64"):
        TritonSiLU.apply(torch.ones(3, dtype=torch.float64))


def test_a_cpu_tensor_without_the_interpreter_is_told_how(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    with pytest.raises(RuntimeError, match="set TRITON_INTERPRET=1"):
        TritonSiLU.apply(torch.ones(3))
