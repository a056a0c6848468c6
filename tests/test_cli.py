"""The command line: exit codes, one clear line per user error, zero-config runs, packaging."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gradverify
from gradverify.cli import app
from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("in_repo")


def invoke(*arguments):
    return CliRunner().invoke(app, list(arguments))


def assert_one_clear_error(result, *words):
    assert result.exit_code == ExitCode.USAGE == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_correct_examples_exit_0():
    result = invoke("check", "specs/examples.yaml")
    assert result.exit_code == ExitCode.OK == 0, result.output
    assert "PASSED" in result.stdout


def test_buggy_examples_exit_1():
    result = invoke("check", "specs/buggy.yaml")
    assert result.exit_code == ExitCode.FAILED == 1, result.output
    assert "FAILED" in result.stdout


def test_a_directory_of_specs_is_checked_whole(tmp_path):
    # Two of the bundled spec files, one spelled .yml and one a level down: every spec below.
    (tmp_path / "more").mkdir()
    shutil.copy(ROOT / "specs" / "buggy.yaml", tmp_path / "buggy.yaml")
    shutil.copy(ROOT / "specs" / "examples.yaml", tmp_path / "more" / "examples.yml")
    document = json.loads(invoke("check", str(tmp_path), "--format", "json").stdout)
    targets = {r["target"] for r in document["results"]}
    assert "gradverify.examples.buggy:SwishWrongBeta" in targets
    assert "gradverify.examples.swish:Swish" in targets


def test_a_typo_in_a_spec_key(tmp_path):
    spec = tmp_path / "typo.yaml"
    spec.write_text(
        "target: tests.functions.correct:Square\n"
        "tolerence: {atol: 1.0e-5}\n"
        "cases: [{name: vector, inputs: [{shape: [4]}]}]\n"
    )
    result = invoke("check", str(spec))
    assert_one_clear_error(result, f"{spec}:2", "tolerence", "did you mean 'tolerance'")


def test_a_wrong_import_path():
    result = invoke("check", "gradverify.examples.nope:X")
    assert_one_clear_error(result, "gradverify.examples.nope:X", "no module named")


def test_a_missing_attribute():
    result = invoke("check", "gradverify.examples.swish:Swosh")
    assert_one_clear_error(result, "has no attribute 'Swosh'", "did you mean 'Swish'")


def test_a_wrong_target_inside_a_spec(tmp_path):
    spec = tmp_path / "nope.yaml"
    spec.write_text("target: gradverify.examples.nope:X\ncases: [{name: a, inputs: []}]\n")
    assert_one_clear_error(invoke("check", str(spec)), "gradverify.examples.nope")


def test_a_spec_file_that_does_not_exist():
    assert_one_clear_error(invoke("check", "specs/nope.yaml"), "no such spec file", "nope.yaml")


def test_too_few_gradients_exit_1_naming_the_count():
    result = invoke(
        "check",
        "tests.functions.structural_bugs:TooFewGradients",
        "--spec",
        "tests/specs/checks/scale_like.yaml",
        "--format",
        "json",
    )
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    (backward,) = [r for r in document["results"] if r["check"] == "backward"]
    assert backward["status"] == "fail"
    assert "backward returned 1 value(s), but forward takes 2 argument(s)" in backward["message"]
    assert {r["target"] for r in document["results"]} == {
        "tests.functions.structural_bugs:TooFewGradients"
    }


def test_too_few_gradients_in_the_text_report():
    result = invoke(
        "check",
        "tests.functions.structural_bugs:TooFewGradients",
        "--spec",
        "tests/specs/checks/scale_like.yaml",
    )
    assert result.exit_code == 1
    assert "forward takes 2 argument(s)" in " ".join(result.stdout.split())


def test_seed_override_changes_the_inputs():
    def worst(*seed):
        document = json.loads(
            invoke("check", "tests/specs/bugs.yaml", "--format", "json", *seed).stdout
        )
        (result,) = [
            r
            for r in document["results"]
            if r["target"].endswith(":FlippedSign") and r["check"] == "finite_difference"
        ]
        return result["analytical"], result["numerical"]

    assert worst() == worst("--seed", "0")  # bugs.yaml's own seed is the default, 0
    assert worst("--seed", "1") != worst()


def test_verbosity_flags_choose_how_much_text_is_shown():
    spec = ("check", "specs/buggy.yaml", "--no-isolation", "--no-cache")
    default, quiet, verbose = invoke(*spec), invoke(*spec, "-q"), invoke(*spec, "--verbose")
    assert {default.exit_code, quiet.exit_code, verbose.exit_code} == {ExitCode.FAILED}
    assert "jvp" not in default.stdout  # Not applicable to these Functions: counted only
    assert " jvp " in verbose.stdout and " vmap " in verbose.stdout  # every check, one row each
    assert "wasted work" in default.stdout and "wasted work" not in quiet.stdout
    assert "warning" in quiet.stdout  # counted
    assert len(quiet.stdout.splitlines()) < len(default.stdout.splitlines())


def test_zero_config_infers_inputs_and_says_so():
    result = invoke("check", "tests.functions.correct:Square")
    assert result.exit_code == 0, result.output
    assert "inputs inferred" in result.stdout
    assert (
        "tests.functions.correct:Square  inferred 3 cases ([4]; x [3, 5]; x [2, 3, 4])"
        in result.stdout
    )


def test_zero_config_notes_are_in_the_json_too():
    document = json.loads(
        invoke("check", "tests.functions.correct:Square", "--format", "json").stdout
    )
    assert any("inputs inferred" in note for note in document["notes"])
    assert {r["case"] for r in document["results"]} == {
        "inferred", "inferred: x [3, 5]", "inferred: x [2, 3, 4]",
    }  # fmt: skip


def test_zero_config_on_a_forward_that_rejects_the_guess_prints_a_spec_to_write():
    result = invoke("check", "tests.functions.mapping:FixedSizeMatMul")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "cannot infer inputs" in result.stderr
    assert "target: tests.functions.mapping:FixedSizeMatMul" in result.stderr
    assert "cases:" in result.stderr
    assert "# a:" in result.stderr and "# b:" in result.stderr
    assert result.stdout == ""


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"gradverify {gradverify.__version__}"


def test_an_internal_error_asks_for_a_bug_report(monkeypatch):
    from gradverify.run import session

    def broken(*args, **kwargs):
        raise RuntimeError("an engine bug")

    monkeypatch.setattr(session, "run", broken)
    result = invoke("check", "specs/examples.yaml")
    assert result.exit_code == ExitCode.INTERNAL == 3
    assert "an engine bug" in result.stderr  # the traceback, for the report
    assert "internal error in gradverify" in result.stderr
    assert "report" in result.stderr.strip().splitlines()[-1]


# Real processes: the package's __main__ and the installed console script.


def run(*command, **kwargs):
    environment = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=environment, timeout=120, **kwargs
    )


def test_python_m_gradverify():
    completed = run(sys.executable, "-m", "gradverify", "check", "specs/examples.yaml")
    assert completed.returncode == 0, completed.stderr
    assert "PASSED" in completed.stdout


def test_the_console_script():
    script = Path(sys.executable).parent / "gradverify"
    assert script.exists(), "the package is not installed with its console script"
    completed = run(str(script), "check", "specs/buggy.yaml", "--format", "json")
    assert completed.returncode == 1, completed.stderr
    assert json.loads(completed.stdout)["passed"] is False


@pytest.mark.parametrize("arguments", [["--help"], ["check", "--help"], ["--version"]])
def test_help_and_version_do_not_import_torch(arguments):
    program = (
        "import sys\n"
        "from gradverify.cli import main\n"
        f"sys.argv = ['gradverify', *{arguments!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print('torch imported:', 'torch' in sys.modules, 'exit:', code, file=sys.stderr)\n"
    )
    completed = run(sys.executable, "-c", program)
    assert "torch imported: False exit: 0" in completed.stderr
    assert "gradverify" in completed.stdout
