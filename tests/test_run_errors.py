"""Trouble in one case or one target is that one's result; the run goes on and says so.

gradverify's own error on one case (injected into a check by tests/functions/run_errors.py)
is an internal-error result with the traceback, every other case is reported in every
format, and the exit code is 3 at the end. A package's module that cannot be imported is a
failed result with the import error, never a green run that checked nothing. A Ctrl-C
leaves the report of what finished.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.report import FORMATS, RenderOptions
from gradverify.results import Report, Status
from gradverify.run import session
from gradverify.spec.load import parse_spec
from tests.functions import run_errors

ROOT = Path(__file__).resolve().parents[1]
SPEC = """\
functions:
  - target: tests.functions.run_errors:Double
    cases:
      - {name: first, inputs: [{shape: [3]}]}
      - {name: boom, inputs: [{shape: [4]}]}
      - {name: last, inputs: [{shape: [5]}]}
  - target: tests.functions.correct:Square
    cases:
      - {name: vector, inputs: [{shape: [3]}]}
"""
CHECKS = "checks: [forward, backward, finite_difference, gradcheck]\n"


def spec_entries(text: str = SPEC) -> list:
    return parse_spec(text, "run_errors.yaml")


def assert_only_boom_broke(report: Report) -> None:
    broken = report.internal_errors
    assert [(r.case, r.check, r.status) for r in broken] == [
        ("boom", run_errors.INJECTED_CHECK, Status.FAIL)
    ]
    assert "injected into finite_difference" in broken[0].message
    assert any("Traceback" in line for line in broken[0].details)
    assert "bug in gradverify" in (broken[0].hint or "")
    others = [r for r in report.results if r.case != "boom"]
    assert {r.case for r in others} == {"first", "last", "vector"}
    assert not any(r.failed for r in others)
    boom = {r.check: r for r in report.results if r.case == "boom"}
    assert boom["forward"].status is Status.PASS  # what ran before the error is kept
    assert boom["gradcheck"].status is Status.SKIP  # what was left is not run, and says why
    assert boom["gradcheck"].same_as == run_errors.INJECTED_CHECK


def test_an_internal_error_in_one_case_in_process(monkeypatch):
    from gradverify.checks import get_check

    injected = type(get_check(run_errors.INJECTED_CHECK))
    monkeypatch.setattr(injected, "run", injected.run)  # put back after the test
    run_errors.inject("boom")
    report = session.run(spec_entries(), session.RunOptions(isolation=False, cache=False))
    assert_only_boom_broke(report)
    assert not report.passed


def test_an_internal_error_in_one_case_in_a_worker(in_repo, monkeypatch):
    """The worker imports the target with the variable set and fails in finite_difference
    on `boom`; its traceback comes back as that case's result, and the pool runs on."""
    monkeypatch.setenv(run_errors.INJECT, "boom")
    report = session.run(spec_entries(), session.RunOptions(cache=False, jobs=2))
    assert_only_boom_broke(report)


def test_every_format_reports_the_error_and_the_other_cases(in_repo, monkeypatch):
    monkeypatch.setenv(run_errors.INJECT, "boom")
    report = session.run(spec_entries(), session.RunOptions(cache=False, jobs=1))
    for name, render in FORMATS.items():
        text = render(report, RenderOptions())
        assert "injected into finite_difference" in text, name
    suites = ET.fromstring(FORMATS["junit"](report, RenderOptions()))
    assert suites.get("errors") == "1" and suites.get("failures") == "0"
    errors = [c.get("name") for c in suites.iter("testcase") if c.find("error") is not None]
    assert errors == ["boom::finite_difference"]
    passed = {c.get("name").split("::")[0] for c in suites.iter("testcase") if not len(c)}
    assert passed == {"first", "boom", "last", "vector"}  # boom's forward and backward too
    sarif = json.loads(FORMATS["sarif"](report, RenderOptions()))
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    document = json.loads(FORMATS["json"](report, RenderOptions()))
    internal = [r for r in document["results"] if r["internal"]]
    assert [(r["case"], r["status"]) for r in internal] == [("boom", "fail")]


def test_the_command_reports_every_other_case_and_exits_3(tmp_path):
    """The console script, as CI runs it: text on stdout, JSON in the `-o` file, exit 3."""
    spec = tmp_path / "run_errors.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    output = tmp_path / "report.json"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gradverify"), "check", str(spec), "--no-cache",
         "--format", "json", "-o", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, run_errors.INJECT: "boom", "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == ExitCode.INTERNAL == 3, done.stdout + done.stderr
    for case in ("first", "last", "vector"):
        assert f"case {case}  7 passed" in done.stdout
    assert "1 internal error(s) of gradverify" in done.stdout
    assert "Please report it" in done.stderr
    document = json.loads(output.read_text(encoding="utf-8"))
    assert {r["case"] for r in document["results"]} == {"first", "boom", "last", "vector"}
    assert document["passed"] is False and document["interrupted"] is False


def test_an_internal_error_while_inferring_one_target(monkeypatch, in_repo):
    """Zero-config: gradverify failing on one target's inference leaves the others to run."""
    from gradverify.inference import zeroconfig

    original = zeroconfig.infer_entry

    def infer_entry(target):
        if target.name == "Double":
            raise ZeroDivisionError("an internal error injected into inference")
        return original(target)

    monkeypatch.setattr(zeroconfig, "infer_entry", infer_entry)
    options = session.RunOptions(isolation=False, cache=False)
    targets = ["tests.functions.run_errors:Double", "tests.functions.correct:Square"]
    entries, failed = session.infer_entries(targets, options)
    assert [entry.spec.target for entry, _ in entries] == ["tests.functions.correct:Square"]
    (error,) = failed
    assert error.internal and error.target == "tests.functions.run_errors:Double"
    assert "ZeroDivisionError" in error.message

    result = CliRunner().invoke(app, ["check", *targets, "--no-isolation", "--no-cache"])
    assert result.exit_code == ExitCode.INTERNAL, result.output
    assert "✓ tests.functions.correct:Square" in result.stdout


def test_a_degenerate_range_is_a_failed_guess_not_a_crash(in_repo):
    """An index tensor with no float tensor to fit its range to: [0, 0] is no range."""
    from gradverify.inference.choice import TENSOR, Choice
    from gradverify.inference.search.probe import probe
    from gradverify.target.loading import load_target

    target = load_target("tests.functions.run_errors:OneHotRows")
    index = Choice("index", TENSOR, (6,), requires_grad=False, dtype="int64", low=0, high=0)
    outcome = probe(target, [index])
    assert outcome.stage == "forward"
    assert "must be less than" in (outcome.error or "")
    options = session.RunOptions(isolation=False, cache=False)
    (found,) = session.infer_each(["tests.functions.run_errors:OneHotRows"], options)
    assert not (getattr(found, "internal", False))  # inferred, or a reason: never our crash


BROKEN = "import torch\nimport gvbrokenpkg._no_such_module\n\n\nclass Twice(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return 2 * x\n\n    @staticmethod\n    def backward(ctx, grad_output):\n        return 2 * grad_output\n"


def make_package(root: Path, *, good: bool) -> None:
    package = root / "gvbrokenpkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "bad.py").write_text(BROKEN, encoding="utf-8")
    if good:
        good_source = BROKEN.replace("import gvbrokenpkg._no_such_module\n", "")
        (package / "good.py").write_text(good_source, encoding="utf-8")


@pytest.mark.parametrize("isolation", ["--isolation", "--no-isolation"])
def test_a_module_that_cannot_be_imported_fails_the_run(tmp_path, monkeypatch, isolation):
    make_package(tmp_path, good=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(
        app, ["check", "gvbrokenpkg", "--no-cache", "--format", "json", isolation]
    )
    assert result.exit_code == ExitCode.FAILED, result.output
    document = json.loads(result.stdout)
    failed = [r for r in document["results"] if r["status"] == "fail"]
    assert [r["target"] for r in failed] == ["gvbrokenpkg.bad:Twice"]
    assert "No module named 'gvbrokenpkg._no_such_module'" in failed[0]["message"]
    assert not failed[0]["internal"]
    passed = {r["target"] for r in document["results"] if r["status"] == "pass"}
    assert passed == {"gvbrokenpkg.good:Twice"}
    (without,) = document["coverage"]["without_inputs"]
    assert without["target"] == "gvbrokenpkg.bad:Twice"


def test_a_package_where_nothing_loads_is_never_green(tmp_path, monkeypatch):
    make_package(tmp_path, good=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(app, ["check", "gvbrokenpkg", "--no-cache"])
    assert result.exit_code == ExitCode.FAILED, result.output
    assert "PASSED" not in result.stdout
    assert "gvbrokenpkg._no_such_module" in result.stdout


def test_a_python_file_no_spec_depends_on_offers_its_functions(tmp_path, monkeypatch):
    (tmp_path / "gvloose.py").write_text(
        BROKEN.replace("import gvbrokenpkg._no_such_module\n", ""), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "gvloose.py"])
    assert result.exit_code == ExitCode.OK, result.output
    said = " ".join(result.stdout.split())  # as wrapped to the width
    assert "gvloose.py defines 1 Function that no spec checks (Twice)" in said
    assert "`gradverify check gvloose` checks every one" in said
    assert "NOTHING CHECKED" in said and "PASSED" not in said


def test_the_pre_commit_hook_offers_nothing(tmp_path, monkeypatch):
    """With --changed-files, an unrelated Python file is the common case: no offer."""
    (tmp_path / "gvloose.py").write_text(
        BROKEN.replace("import gvbrokenpkg._no_such_module\n", ""), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "--changed-files", "gvloose.py"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "no spec checks" not in result.stdout


SLEEPY = """\
target: tests.functions.run_errors:Sleepy
checks: [forward, backward]
cases:
  - {name: quick, inputs: [{shape: [3]}]}
  - {name: slow, inputs: [{shape: [7]}]}
"""


def test_ctrl_c_writes_the_report_of_what_finished(tmp_path):
    """A real Ctrl-C to the console script, sent once the slow case has begun (its forward
    writes the marker): the JSON report has the quick case and says it was interrupted."""
    spec = tmp_path / "sleepy.yaml"
    spec.write_text(SLEEPY, encoding="utf-8")
    marker, output = tmp_path / "marker", tmp_path / "report.json"
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gradverify"), "check", str(spec), "--no-cache",
         "-j", "1", "--format", "json", "-o", str(output)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, run_errors.MARKER: str(marker), "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), process.communicate()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == ExitCode.INTERRUPTED, stdout + stderr
    document = json.loads(output.read_text(encoding="utf-8"))
    assert document["interrupted"] is True and document["passed"] is False
    assert {r["case"] for r in document["results"]} == {"quick"}
    assert "INTERRUPTED" in stdout


def test_target_lines_say_each_finished_target_after_the_delay(monkeypatch):
    from io import StringIO

    from gradverify.results import Result
    from gradverify.run import progress

    entry = SimpleNamespace(file="s.yaml", line=1, spec=SimpleNamespace(target="m:F", cases=[1, 2]))
    stream = StringIO()
    lines = progress.TargetLines([entry], stream)
    task = SimpleNamespace(entry=entry, case="a")
    result = Result(target="m:F", case="a", check="forward", status=Status.PASS)
    lines.listen(task, "results", [result])
    lines.listen(task, "done", ())
    assert stream.getvalue() == ""  # the target is not finished
    monkeypatch.setattr(time, "monotonic", lambda: lines.started + progress.LINES_AFTER + 1)
    failed = Result(target="m:F", case="b", check="forward", status=Status.FAIL)
    lines.listen(task, "results", [failed])
    lines.listen(task, "done", ())
    assert (
        stream.getvalue()
        == f"[1/1] ✗ m:F  1 passed, 1 failed  ({progress.LINES_AFTER + 1:.0f} s)\n"
    )


def test_a_short_run_prints_no_target_lines():
    from io import StringIO

    from gradverify.run import progress

    entry = SimpleNamespace(file=None, line=None, spec=SimpleNamespace(target="m:F", cases=[1]))
    stream = StringIO()
    lines = progress.TargetLines([entry], stream)
    lines.listen(SimpleNamespace(entry=entry, case="a"), "done", ())
    assert lines.finished == 1 and stream.getvalue() == ""


def test_init_says_when_its_trial_met_an_internal_error(tmp_path, monkeypatch, in_repo):
    """`init` tries the spec it wrote: gradverify failing on a case of the trial is exit 3."""
    from gradverify.checks import get_check

    injected = type(get_check(run_errors.INJECTED_CHECK))
    monkeypatch.setattr(injected, "run", injected.run)  # put back after the test
    run_errors.inject("basic")
    written = tmp_path / "double.yaml"
    result = CliRunner().invoke(
        app, ["init", "tests.functions.run_errors:Double", "-o", str(written), "--no-isolation"]
    )
    assert result.exit_code == ExitCode.INTERNAL, result.output
    assert written.exists()
    assert "internal error in gradverify" in result.stdout
