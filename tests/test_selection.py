"""Changed files to specs: what the pre-commit hook runs, and what it leaves alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.errors import SpecError, UsageError
from gradverify.exitcodes import ExitCode
from gradverify.spec.changed_files import resolve, sort_arguments, specs_depending_on

FUNCTION = """\
import torch

from {package}.helpers import twice


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return twice(x)

    @staticmethod
    def backward(ctx, grad_output):
        return twice(grad_output)
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def spec(target: str) -> str:
    return f"target: {target}\nchecks: [forward, backward]\ncases: [{{name: c, inputs: [{{shape: [3]}}]}}]\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A package: ops.py (imports helpers.py), linear.py, unrelated.py, a reference in
    refs.py, and specs for them (one file with two Functions); the cwd is its root."""
    package = f"gvsel_{uuid.uuid4().hex[:8]}"  # fresh: modules stay cached across tests
    root = tmp_path
    write(root / package / "__init__.py", "")
    write(root / package / "helpers.py", "def twice(x):\n    return x * 2\n")
    write(root / package / "ops.py", FUNCTION.format(package=package, name="Double"))
    write(root / package / "linear.py", FUNCTION.format(package=package, name="Other"))
    write(root / package / "unrelated.py", "VALUE = 1\n")
    write(root / package / "refs.py", "def double(x):\n    return x * 2\n")
    write(root / "specs" / "ops.yaml", spec(f"{package}.ops:Double"))
    write(
        root / "specs" / "more.yaml",
        f"""\
        functions:
          - target: {package}.linear:Other
            checks: [forward, backward]
            cases: [{{name: c, inputs: [{{shape: [3]}}]}}]
          - target: {package}/ops.py:Double
            reference: {package}.refs:double
            checks: [forward, backward]
            cases: [{{name: c, inputs: [{{shape: [3]}}]}}]
        """,
    )
    write(root / "ci" / "workflow.yml", "on: push\n")
    monkeypatch.chdir(root)
    return package


def targets(entries):
    return [entry.spec.target for entry in entries]


def test_a_python_file_selects_the_specs_whose_code_it_is(project):
    selected = specs_depending_on([f"{project}/ops.py"], ["specs"])
    assert targets(selected) == [f"{project}/ops.py:Double", f"{project}.ops:Double"]


def test_a_file_imported_by_the_target_selects_its_specs(project):
    selected = specs_depending_on([f"{project}/helpers.py"], ["specs"])
    assert sorted(targets(selected)) == sorted(
        [f"{project}.linear:Other", f"{project}/ops.py:Double", f"{project}.ops:Double"]
    )


def test_a_reference_is_code_the_spec_depends_on(project):
    selected = specs_depending_on([f"{project}/refs.py"], ["specs"])
    assert targets(selected) == [f"{project}/ops.py:Double"]


def test_the_package_init_is_run_by_every_import_of_the_package(project):
    assert len(specs_depending_on([f"{project}/__init__.py"], ["specs"])) == 3


def test_an_unrelated_file_selects_nothing(project):
    assert specs_depending_on([f"{project}/unrelated.py", "setup.py"], ["specs"]) == []


def test_a_missing_spec_path_holds_no_specs(project):
    assert specs_depending_on([f"{project}/ops.py"], ["nowhere"]) == []


def test_a_broken_spec_in_the_spec_paths_is_an_error(project):
    write(Path("specs/broken.yaml"), "target: x:Y\ncases: [{name: c, inputs: [{shap: [3]}]}]\n")
    with pytest.raises(SpecError, match="shap"):
        specs_depending_on([f"{project}/ops.py"], ["specs"])


def test_changed_files_keep_only_specs_in_the_spec_paths(project):
    arguments = ["specs/ops.yaml", "ci/workflow.yml", "README.md", f"{project}/ops.py"]
    changed = sort_arguments(arguments, ["specs"], changed_files=True)
    assert changed.arguments == ["specs/ops.yaml"]
    assert changed.python_files == [f"{project}/ops.py"]
    assert changed.ignored == ["ci/workflow.yml", "README.md"]
    typed = sort_arguments([*arguments, "pkg.mod:Fn", "file.py:Fn"], ["specs"], changed_files=False)
    assert typed.arguments == [
        "specs/ops.yaml",
        "ci/workflow.yml",
        "README.md",
        "pkg.mod:Fn",
        "file.py:Fn",
    ]
    assert typed.python_files == [f"{project}/ops.py"]


def test_resolve_without_paths_or_with_all_files_is_every_configured_spec(project):
    assert resolve([], ["specs"], all_files=False, changed_files=False).arguments == ["specs"]
    everything = resolve([f"{project}/unrelated.py"], ["specs"], all_files=True, changed_files=True)
    assert (everything.arguments, everything.entries) == (["specs"], [])
    with pytest.raises(UsageError, match="no spec path 'gradspecs'"):
        resolve([], ["gradspecs"], all_files=False, changed_files=False)


def test_a_spec_given_and_selected_runs_once(project):
    work = resolve(["specs/ops.yaml", f"{project}/ops.py"], ["specs"], False, True)
    assert work.arguments == ["specs/ops.yaml"]
    assert targets(work.entries) == [f"{project}/ops.py:Double"]  # the other is in specs/ops.yaml
    assert work.notes == [f"2 Function spec(s) depend on the changed {project}/ops.py"]


# --- through the command line -------------------------------------------------------------


def check(*arguments: str):
    command = ["check", *arguments, "--no-isolation", "--no-cache", "--format", "json"]
    return CliRunner().invoke(app, command)


def test_check_on_a_changed_file_runs_only_its_specs(project):
    result = check("--changed-files", f"{project}/linear.py", "ci/workflow.yml")
    assert result.exit_code == ExitCode.OK, result.output
    report = json.loads(result.stdout)
    assert {r["target"] for r in report["results"]} == {f"{project}.linear:Other"}
    assert report["notes"] == [
        f"1 Function spec(s) depend on the changed {project}/linear.py",
        "1 changed file(s) ignored: not specs in specs, not Python",
    ]


def test_all_files_runs_every_spec(project):
    result = check("--all-files", f"{project}/unrelated.py")
    assert result.exit_code == ExitCode.OK, result.output
    assert json.loads(result.stdout)["summary"]["targets"] == 3


def test_unrelated_changes_run_nothing_and_exit_0_without_importing_torch(project):
    program = (
        "import sys\n"
        "from gradverify.cli import main\n"
        f"sys.argv = ['gradverify', 'check', '--changed-files', '{project}/unrelated.py', "
        "'ci/workflow.yml', 'README.md']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print('torch imported:', 'torch' in sys.modules, 'exit:', code, file=sys.stderr)\n"
    )
    environment = {**os.environ, "NO_COLOR": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=environment, timeout=60
    )
    assert "torch imported: False exit: 0" in completed.stderr, completed.stderr
    assert f"no spec in specs depends on the changed {project}/unrelated.py" in completed.stdout
    assert "0 result(s)" in completed.stdout
