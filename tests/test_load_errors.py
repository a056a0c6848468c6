"""A spec or target that cannot be used, among others, is its own result; the others run.

A spec run over several files and targets where one target cannot be imported (no module,
no attribute, an ImportError or a SyntaxError in the user's module), one spec file does not
read or validate, or one case does not fit forward: that one is a failed result with the
clear message (file, line, key), every other target is checked and reported in every format,
and the exit code is 2 at the end (3 if gradverify itself failed on a case). A single spec
whose only target does not load stays one clear error, as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from tests.functions import run_errors

pytestmark = pytest.mark.usefixtures("in_repo")

CHECKS = "checks: [forward, backward, finite_difference]\n"
GOOD = (
    "target: gradverify.examples.activations:ReLU\n" + CHECKS + "cases:\n"
    "  - {name: vector, inputs: [{shape: [6], low: 0.1, high: 2.0}]}\n"
)
GOOD_TARGET = "gradverify.examples.activations:ReLU"
MISSING_MODULE = (
    "target: no_such_module_for_gradverify:Fn\n" + CHECKS + "cases:\n"
    "  - {name: small, inputs: [{shape: [3]}]}\n"
)


def check(*arguments: str):
    return CliRunner().invoke(app, ["check", "--no-cache", *arguments])


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def usage_results(document: dict) -> list[dict]:
    return [r for r in document["results"] if r["usage"]]


def test_a_target_whose_module_is_missing_is_its_result_and_the_others_are_reported(tmp_path):
    write(tmp_path, "good.yaml", GOOD)
    bad = write(tmp_path, "missing.yaml", MISSING_MODULE)
    report = tmp_path / "report.json"
    result = check(str(tmp_path), "--format", "json", "-o", str(report))
    assert result.exit_code == ExitCode.USAGE == 2, result.output
    document = json.loads(report.read_text(encoding="utf-8"))
    good = [r for r in document["results"] if r["target"] == GOOD_TARGET]
    assert {r["check"] for r in good} >= {"forward", "backward", "finite_difference"}
    assert all(r["status"] == "pass" for r in good)
    (broken,) = usage_results(document)
    assert broken["target"] == "no_such_module_for_gradverify:Fn"
    assert (broken["status"], broken["case"], broken["internal"]) == ("fail", "not loaded", False)
    assert broken["spec_file"] == str(bad) and broken["spec_line"] == 1
    assert broken["message"] == (
        f"{bad}:1: target: cannot load target 'no_such_module_for_gradverify:Fn': "
        "no module named 'no_such_module_for_gradverify'"
    )
    assert document["passed"] is False
    # The terminal's text report (with -o, stdout is text): both, and the error named last.
    assert f"{GOOD_TARGET}  case vector" in result.stdout
    assert str(bad) in result.stdout and "no_such_module_for_gradverify" in result.stdout
    text = " ".join(result.stdout.split())
    assert "✗ forward (spec or target error)" in text
    assert text.endswith("1 spec or target error(s)")
    assert f"error: {bad}:1: target: cannot load target" in result.stderr
    assert "Traceback" not in result.output


def test_attribute_import_and_syntax_errors_each_name_their_target_in_process(tmp_path):
    """--no-isolation: the same in this process. One spec file, four targets: three that do
    not load, each for its own reason, and one that runs."""
    raises = write(tmp_path, "raises_on_import.py", "raise ImportError('built for torch 1.x')\n")
    syntax = write(tmp_path, "bad_syntax.py", "def broken(:\n    pass\n")
    spec = write(
        tmp_path, "several.yaml",
        "functions:\n"
        f"  - target: gradverify.examples.activations:ReLUU\n    {CHECKS}"
        "    cases: [{name: a, inputs: [{shape: [3]}]}]\n"
        f"  - target: {raises}:Fn\n    {CHECKS}"
        "    cases: [{name: a, inputs: [{shape: [3]}]}, {name: b, inputs: [{shape: [4]}]}]\n"
        f"  - target: {syntax}:Fn\n    {CHECKS}"
        "    cases: [{name: a, inputs: [{shape: [3]}]}]\n"
        f"  - target: {GOOD_TARGET}\n    {CHECKS}"
        "    cases: [{name: vector, inputs: [{shape: [6], low: 0.1, high: 2.0}]}]\n",
    )  # fmt: skip
    result = check(str(spec), "--no-isolation", "--format", "json")
    assert result.exit_code == ExitCode.USAGE, result.output
    document = json.loads(result.stdout)
    broken = {r["target"]: r for r in usage_results(document)}
    assert list(broken) == [
        "gradverify.examples.activations:ReLUU",
        f"{raises}:Fn",
        f"{syntax}:Fn",
    ]  # one result for each, not one per case
    missing_attribute = broken["gradverify.examples.activations:ReLUU"]
    assert missing_attribute["message"].startswith(f"{spec}:2: target: cannot load target")
    assert "has no attribute 'ReLUU'" in missing_attribute["message"]
    assert "did you mean 'ReLU'" in missing_attribute["message"]
    assert f"{spec}:5: target:" in broken[f"{raises}:Fn"]["message"]
    assert "ImportError: built for torch 1.x" in broken[f"{raises}:Fn"]["message"]
    assert "SyntaxError" in broken[f"{syntax}:Fn"]["message"]
    assert {r["spec_line"] for r in broken.values()} == {2, 5, 8}
    good = [r for r in document["results"] if r["target"] == GOOD_TARGET]
    assert good and all(r["status"] == "pass" for r in good)
    assert result.stderr.count("error: ") == 3


def test_a_malformed_spec_among_good_ones_is_its_result(tmp_path):
    write(tmp_path, "good.yaml", GOOD)
    unclosed = write(
        tmp_path, "unclosed.yaml",
        f"target: {GOOD_TARGET}\ncases:\n  - name: a\n    inputs: [{{shape: [3]}}\n",
    )  # fmt: skip
    typo = write(
        tmp_path, "typo.yaml",
        f"target: {GOOD_TARGET}\ntolerence: {{atol: 1.0e-5}}\n"
        "cases: [{name: a, inputs: [{shape: [3]}]}]\n",
    )  # fmt: skip
    result = check(str(tmp_path), "--format", "json")
    assert result.exit_code == ExitCode.USAGE, result.output
    document = json.loads(result.stdout)
    assert [r["case"] for r in document["results"] if r["target"] == GOOD_TARGET] == [
        "vector"
    ] * 3  # the good spec's three checks ran; the broken files' target did not
    broken = {r["spec_file"]: r for r in usage_results(document)}
    assert set(broken) == {str(unclosed), str(typo)}
    assert broken[str(unclosed)]["spec_line"] == 4
    assert broken[str(unclosed)]["message"].startswith(f"{unclosed}:4:13: invalid YAML")
    assert broken[str(unclosed)]["case"] == "not read"
    assert broken[str(typo)]["message"].startswith(f"{typo}:2:1: tolerence: unknown key")
    assert "did you mean 'tolerance'" in broken[str(typo)]["message"]
    assert f"error: {typo}:2:1: tolerence" in result.stderr


def test_a_case_that_does_not_fit_forward_is_its_result(tmp_path):
    spec = write(
        tmp_path, "arity.yaml",
        f"target: {GOOD_TARGET}\n{CHECKS}cases:\n"
        "  - {name: vector, inputs: [{shape: [6], low: 0.1, high: 2.0}]}\n"
        "  - {name: two, inputs: [{shape: [3]}, {shape: [3]}]}\n",
    )  # fmt: skip
    result = check(str(spec), "--format", "json")
    assert result.exit_code == ExitCode.USAGE, result.output
    document = json.loads(result.stdout)
    (broken,) = usage_results(document)
    assert (broken["case"], broken["spec_line"]) == ("two", 5)
    assert broken["message"].startswith(f"{spec}:5: case 'two' gives 2 inputs")
    vector = [r for r in document["results"] if r["case"] == "vector"]
    assert len(vector) == 3 and all(r["status"] == "pass" for r in vector)


def test_a_single_spec_whose_target_does_not_load_is_one_clear_error(tmp_path):
    bad = write(tmp_path, "missing.yaml", MISSING_MODULE)
    result = check(str(bad), "--format", "json")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}:1: target: cannot load target 'no_such_module_for_gradverify:Fn': "
        "no module named 'no_such_module_for_gradverify'"
    ]


def test_every_spec_file_malformed_is_one_clear_error(tmp_path):
    write(tmp_path, "a.yaml", "target: x:Y\ncases: 3\n")
    write(tmp_path, "b.yaml", "- just a list\n")
    result = check(str(tmp_path))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {tmp_path / 'a.yaml'}:2")
    assert lines[1].startswith(f"{tmp_path / 'b.yaml'}:1:1")


def test_an_internal_error_outranks_a_target_error(tmp_path, monkeypatch):
    """Both in one run: exit 3, with the target error and every other case reported."""
    monkeypatch.setenv(run_errors.INJECT, "boom")
    write(tmp_path, "missing.yaml", MISSING_MODULE)
    write(
        tmp_path, "double.yaml",
        f"target: tests.functions.run_errors:Double\n{CHECKS}cases:\n"
        "  - {name: first, inputs: [{shape: [3]}]}\n  - {name: boom, inputs: [{shape: [4]}]}\n",
    )  # fmt: skip
    result = check(str(tmp_path), "--format", "json")
    assert result.exit_code == ExitCode.INTERNAL == 3, result.output
    document = json.loads(result.stdout)
    assert [r["target"] for r in usage_results(document)] == ["no_such_module_for_gradverify:Fn"]
    assert [r["case"] for r in document["results"] if r["internal"]] == ["boom"]
    first = [r for r in document["results"] if r["case"] == "first"]
    assert len(first) == 3 and all(r["status"] == "pass" for r in first)
    assert "error: " in result.stderr and "bug in gradverify" in result.stderr


def test_a_target_named_on_the_command_line_that_does_not_load_among_others(tmp_path):
    """Zero-config: a target no spec names that cannot be imported, beside a spec and a
    target that can, is its result; the others are inferred, run and reported."""
    good = write(tmp_path, "good.yaml", GOOD)
    result = check(
        str(good), "gradverify.examples.swish:Swosh", "tests.functions.correct:Square",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == ExitCode.USAGE, result.output
    document = json.loads(result.stdout)
    (broken,) = usage_results(document)
    assert (broken["target"], broken["case"]) == ("gradverify.examples.swish:Swosh", "not loaded")
    assert "has no attribute 'Swosh' (did you mean 'Swish'?)" in broken["message"]
    targets = {r["target"] for r in document["results"] if not r["usage"]}
    assert targets == {GOOD_TARGET, "tests.functions.correct:Square"}
    assert "error: cannot load target 'gradverify.examples.swish:Swosh'" in result.stderr


def test_every_format_reports_the_target_that_does_not_load_and_the_others(tmp_path):
    """session.run(keep_going=True) in this process, each format rendered from its report."""
    from gradverify.report import FORMATS, RenderOptions
    from gradverify.run import session
    from gradverify.spec.load import parse_spec

    entries = [
        *parse_spec(MISSING_MODULE, str(tmp_path / "missing.yaml")),
        *parse_spec(GOOD, str(tmp_path / "good.yaml")),
    ]
    options = session.RunOptions(isolation=False, cache=False)
    with pytest.raises(Exception, match="no module named 'no_such_module_for_gradverify'"):
        session.run(entries, options)  # as the pytest plugin and init need it: raised
    report = session.run(entries, options, keep_going=True)
    assert [r.target for r in report.usage_errors] == ["no_such_module_for_gradverify:Fn"]
    assert not report.internal_errors and not report.passed
    for name, render in FORMATS.items():
        text = render(report, RenderOptions())
        assert "no module named" in text, name
        assert "missing.yaml" in text, name
        # The good target's passes: listed, or counted where only problems are listed.
        assert "ReLU" in text or name in ("github", "sarif"), name
    assert "3 passed, 1 failed" in FORMATS["github"](report, RenderOptions())
    sarif = json.loads(FORMATS["sarif"](report, RenderOptions()))
    assert sarif["runs"][0]["properties"]["summary"]["passed"] == 3


@pytest.mark.parametrize("isolation", ["--isolation", "--no-isolation"])
def test_a_target_that_does_not_load_is_tried_once(tmp_path, isolation):
    """Its module raises on import, and counts its imports: one worker (or this process),
    three cases, one import (its other cases get the same error, not another run of the
    module's code)."""
    imports = tmp_path / "imports.txt"
    module = write(
        tmp_path, "counts_imports.py",
        f"with open({str(imports)!r}, 'a') as log:\n    log.write('imported\\n')\n"
        "raise ImportError('needs a library this machine lacks')\n",
    )  # fmt: skip
    spec = write(
        tmp_path, "counted.yaml",
        f"functions:\n  - target: {module}:Fn\n    {CHECKS}    cases:\n"
        + "".join(f"      - {{name: c{n}, inputs: [{{shape: [3]}}]}}\n" for n in range(3))
        + f"  - target: {GOOD_TARGET}\n    {CHECKS}"
        "    cases: [{name: vector, inputs: [{shape: [6], low: 0.1, high: 2.0}]}]\n",
    )  # fmt: skip
    result = check(str(spec), "-j", "1", isolation, "--format", "json")
    assert result.exit_code == ExitCode.USAGE, result.output
    (broken,) = usage_results(json.loads(result.stdout))
    assert "needs a library this machine lacks" in broken["message"]
    assert imports.read_text().splitlines() == ["imported"]


def test_a_target_line_marks_a_target_that_does_not_load(monkeypatch):
    """Without a terminal, a long run's line for a target that could not be loaded is ✗."""
    import time
    from io import StringIO

    from gradverify.run import progress
    from gradverify.spec.load import parse_spec

    (entry,) = parse_spec(MISSING_MODULE, "missing.yaml")
    stream = StringIO()
    lines = progress.TargetLines([entry], stream)
    monkeypatch.setattr(time, "monotonic", lambda: lines.started + progress.LINES_AFTER + 1)
    task = SimpleNamespace(entry=entry, case="small")
    lines.listen(task, "user_error", "cannot load target")
    assert stream.getvalue().startswith(
        "[1/1] ✗ no_such_module_for_gradverify:Fn  0 passed, 1 failed"
    )


def test_the_console_script_reports_the_others_and_exits_2(tmp_path):
    """As CI runs it: text on stdout, JSON in the `-o` file, the error on stderr, exit 2."""
    import os
    import subprocess
    import sys

    write(tmp_path, "good.yaml", GOOD)
    bad = write(tmp_path, "missing.yaml", MISSING_MODULE)
    output = tmp_path / "report.json"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gradverify"), "check", str(tmp_path), "--no-cache",
         "--format", "json", "-o", str(output)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE, done.stdout + done.stderr
    assert f"{GOOD_TARGET}  case vector  " in done.stdout
    assert f"error: {bad}:1: target: cannot load target" in done.stderr
    document = json.loads(output.read_text(encoding="utf-8"))
    assert [r["target"] for r in usage_results(document)] == ["no_such_module_for_gradverify:Fn"]
    assert "Traceback" not in done.stdout + done.stderr
