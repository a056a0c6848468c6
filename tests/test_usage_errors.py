"""Bad flags, bad settings and cases that do not fit forward are usage errors (exit 2).

They are found before anything runs, and say what is wrong and where, never as a check
that failed (exit 1).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
GRADVERIFY = [sys.executable, "-m", "gradverify"]

pytestmark = pytest.mark.usefixtures("in_repo")


def invoke(*arguments: str):
    return CliRunner().invoke(app, list(arguments))


def _spec(directory: Path, text: str, name: str = "spec.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_a_usage_error(value):
    result = invoke("check", "--no-cache", "--timeout", value, "tests.functions.correct:Square")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "'--timeout'" in result.output and "greater than 0" in result.output
    assert "timed out" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("value", ["0", "-2"])
def test_jobs_below_one_is_a_usage_error_naming_the_range(value):
    result = invoke("check", "--no-cache", "-j", value, "tests.functions.correct:Square")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "'--jobs'" in result.output and "1" in result.output
    assert "PASSED" not in result.output


def test_the_real_command_rejects_a_negative_timeout_before_running_anything():
    completed = subprocess.run(
        [*GRADVERIFY, "check", "--timeout", "-1", "specs/examples.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode == ExitCode.USAGE, completed.stderr
    assert "--timeout" in completed.stderr and completed.stdout == ""


@pytest.mark.parametrize(
    ("setting", "key"),
    [("jobs = 0", "tool.gradverify.jobs"), ("timeout = inf", "tool.gradverify.timeout")],
)
def test_the_same_values_in_pyproject_are_usage_errors(tmp_path, monkeypatch, setting, key):
    (tmp_path / "pyproject.toml").write_text(f"[tool.gradverify]\n{setting}\n")
    spec = _spec(
        tmp_path,
        "target: tests.functions.correct:Square\n"
        "checks: [forward]\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert key in result.output


def test_an_infinite_timeout_in_a_spec_is_a_spec_error_not_an_internal_error(tmp_path):
    spec = _spec(
        tmp_path,
        "target: tests.functions.correct:Square\ntimeout: .inf\n"
        "checks: [forward]\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{spec}:2" in result.output and "timeout" in result.output


def _cases(target: str, *cases: str) -> str:
    lines = [f"target: {target}", "checks: [forward]", "cases:"]
    lines.extend(f"  - {{name: {name}, inputs: {inputs}}}" for name, inputs in map(_split, cases))
    return "\n".join(lines) + "\n"


def _split(case: str) -> tuple[str, str]:
    name, inputs = case.split("=", 1)
    return name, inputs


T = "{shape: [3]}"


def test_a_case_with_too_few_inputs_is_a_usage_error_at_the_case_line(tmp_path):
    spec = _spec(tmp_path, _cases("tests.functions.correct:MatMul", f"ok=[{T}, {T}]", f"x=[{T}]"))
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{spec}:5: case 'x' gives 1 input but MatMul.forward takes 2: a, b" in result.output
    assert "TypeError" not in result.output
    # The case that fits still runs and is reported (tests/test_load_errors.py).
    assert "case ok" in result.stdout


def test_the_real_command_says_the_same_without_isolation_too(tmp_path):
    spec = _spec(tmp_path, _cases("tests.functions.correct:MatMul", f"x=[{T}]"))
    for isolation in ("--isolation", "--no-isolation"):
        completed = subprocess.run(
            [*GRADVERIFY, "check", "--no-cache", isolation, str(spec)],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert completed.returncode == ExitCode.USAGE, completed.stderr
        assert f"{spec}:4: case 'x' gives 1 input" in completed.stderr
        assert "Traceback" not in completed.stderr and completed.stdout == ""


@pytest.mark.parametrize("isolation", ["--isolation", "--no-isolation"])
def test_a_callable_that_does_not_import_is_the_spec_error_at_its_case(tmp_path, isolation):
    """A misspelt `{callable: ...}` names the file, line, case and input, and what is
    missing; the case beside it that imports still runs."""
    spec = _spec(
        tmp_path,
        "target: tests.functions.contracts:ApplyFn\n"
        "cases:\n"
        "  - name: good\n"
        '    inputs: [{callable: "torch:sin"}, {shape: [3]}]\n'
        "  - name: misspelt\n"
        '    inputs: [{callable: "torch:sinn"}, {shape: [3]}]\n',
    )
    result = invoke("check", "--no-cache", isolation, str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert (
        f"error: {spec}:5: case 'misspelt': inputs[0]: {{callable: torch:sinn}} cannot be "
        "imported: 'torch' has no attribute 'sinn' (did you mean 'sin'?)"
    ) in result.stderr
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert "case good" in result.stdout


@pytest.mark.parametrize(
    ("target", "inputs", "expected"),
    [
        # Too many, without *args.
        ("tests.functions.correct:MatMul", f"[{T}, {T}, {T}]", "gives 3 inputs but MatMul.forward takes 2: a, b"),
        # Defaults: between the required and all of them.
        ("tests.functions.signatures:ScaledMul", f"[{T}]", "takes 2 to 3: x, w, alpha=1.0"),
        ("tests.functions.signatures:ScaledMul", f"[{T}, {T}, 2.0, 3.0]", "gives 4 inputs"),
        # New style: forward has no ctx, and none is counted.
        ("tests.functions.signatures:NewStyleMul", f"[{T}]", "NewStyleMul.forward takes 2: x, w"),
        # A custom op: its schema.
        ("gradverify_tests::mul", f"[{T}]", "the op gradverify_tests::mul takes 2: x, y"),
        ("gradverify_tests::scale", f"[{T}, 2.0, 1.0]", "takes 1 to 2: x, factor=2.0"),
        # Keyword-only without a default: no case can fill it.
        ("tests.functions.signatures:KeywordOnlyScale", f"[{T}]", "keyword-only argument(s) without a default (scale)"),
    ],
)  # fmt: skip
def test_what_forward_takes_is_said(tmp_path, target, inputs, expected):
    if target.startswith("gradverify_tests::"):
        target = f"tests.functions.custom_ops:{target}"
    spec = _spec(tmp_path, _cases(target, f"c={inputs}"))
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{spec}:4: case 'c' " in result.output and expected in result.output


def test_cases_that_fit_run_as_before(tmp_path):
    specs = [
        _spec(tmp_path, text, f"{index}.yaml")
        for index, text in enumerate([
            _cases("tests.functions.signatures:ScaledMul", f"two=[{T}, {T}]", f"three=[{T}, {T}, 2.0]"),
            _cases("tests.functions.signatures:SumAll", f"one=[{T}]", f"three=[{T}, {T}, {T}]"),
            _cases("tests.functions.signatures:NewStyleMul", f"two=[{T}, {T}]"),
            _cases("tests.functions.custom_ops:gradverify_tests::scale", f"one=[{T}]"),
        ])
    ]  # fmt: skip
    result = invoke("check", "--no-cache", *map(str, specs))
    assert result.exit_code == ExitCode.OK, result.output
    assert "6 case(s)" in result.output


def test_zero_config_on_a_varargs_forward_asks_for_a_spec():
    result = invoke("check", "--no-cache", "tests.functions.signatures:SumAll")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "forward takes *tensors" in result.output
    assert "gradverify init tests.functions.signatures:SumAll" in result.output
    assert "no tensor" not in result.output
