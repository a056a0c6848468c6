"""The console script's fast answers (gradverify.quick): --version, and a pre-commit run that
no changed file concerns, printed before the CLI (typer, rich, pydantic) is imported.

Each answer is compared with the CLI's own for the same arguments and environment, and the
modules imported on the way are listed, so that the path stays light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradverify import quick

SCRIPT = Path(sys.executable).parent / "gradverify"
HEAVY = {"torch", "numpy", "pydantic", "pydantic_core", "rich", "typer", "click", "yaml"}

# Runs an entry function with argv, then lists the modules imported.
PROGRAM = """\
import sys
sys.argv = ["gradverify", *sys.argv[2:]]
entry = __import__(ENTRY_MODULE, fromlist=["main"]).main
code = 0
try:
    entry()
except SystemExit as exit:
    code = exit.code
print("MODULES", " ".join(sorted(sys.modules)), file=sys.stderr)
raise SystemExit(code)
"""

SPEC = "target: mypkg.ops:Double\nchecks: [forward]\ncases: [{name: c, inputs: [{shape: [3]}]}]\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "ops.yaml").write_text(SPEC)
    (tmp_path / "README.md").write_text("# a project\n")
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "workflow.yml").write_text("on: push\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(entry: str, *arguments: str, **environment: str) -> tuple[int, str, str, set[str]]:
    """(exit code, stdout, stderr, imported modules) of `entry` (a module with main) run on
    `arguments` in a fresh interpreter."""
    program = PROGRAM.replace("ENTRY_MODULE", repr(entry))
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")
    }
    done = subprocess.run(
        [sys.executable, "-c", program, "-", *arguments],
        capture_output=True, text=True, env={**env, **environment}, timeout=120,
    )  # fmt: skip
    stderr, _, modules = done.stderr.rpartition("MODULES ")
    return done.returncode, done.stdout, stderr, set(modules.split())


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules if name.split(".")[0] in HEAVY}


FAST = [
    ("--version",),
    ("check", "--changed-files", "README.md"),
    ("check", "--changed-files", "README.md", "ci/workflow.yml", "docs/x.yaml"),
]


@pytest.mark.parametrize("arguments", FAST)
def test_the_fast_path_imports_nothing_heavy(project, arguments):
    code, stdout, _, modules = run("gradverify.__main__", *arguments)
    assert code == 0, stdout
    assert heavy(modules) == set()
    assert "gradverify.cli" not in modules


@pytest.mark.parametrize("arguments", FAST)
@pytest.mark.parametrize(
    "environment",
    [{}, {"FORCE_COLOR": "1"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}],
    ids=["plain", "colour", "no-colour", "tty-compatible"],
)
def test_the_fast_answer_is_the_clis(project, arguments, environment):
    fast = run("gradverify.__main__", *arguments, **environment)
    cli = run("gradverify.cli", *arguments, **environment)
    assert fast[:3] == cli[:3]
    assert heavy(cli[3]), "the comparison must be with the full CLI"


CONFIGURATIONS = [
    '[tool.gradverify]\nspecs = ["specs", "more/specs"]\njobs = 2\ntimeout = 30.5\nmode = "full"\n',
    "[project]\nname = 'x'\n",
]


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_a_plain_configuration_is_read_as_the_cli_reads_it(project, configuration):
    (project / "pyproject.toml").write_text(configuration)
    (project / "sub").mkdir()
    arguments = ("check", "--changed-files", "README.md")
    fast = run("gradverify.__main__", *arguments)
    assert fast[:3] == run("gradverify.cli", *arguments)[:3]
    assert heavy(fast[3]) == set()


@pytest.mark.parametrize(
    ("configuration", "code"),
    [
        ('[tool.gradverify]\nformat = "json"\n', 0),
        ('[tool.gradverify]\njobs = "4"\n', 2),  # strict: a mistake the CLI names
        ("[tool.gradverify]\njobs = true\n", 2),
        ("[tool.gradverify]\nspecs = []\n", 2),
        ("[tool.gradverify]\nunknown = 1\n", 2),
        ("[tool.gradverify\n", 2),
    ],
)
def test_a_configuration_it_cannot_vouch_for_goes_to_the_cli(project, configuration, code):
    (project / "pyproject.toml").write_text(configuration)
    fast = run("gradverify.__main__", "check", "--changed-files", "README.md")
    assert fast[0] == code, fast[2]
    assert heavy(fast[3])  # the CLI answered


def test_a_changed_spec_is_still_validated_and_run(project):
    (project / "specs" / "ops.yaml").write_text(SPEC.replace("checks", "chekcs"))
    code, _, stderr, modules = run(
        "gradverify.__main__", "check", "--changed-files", "specs/ops.yaml", "README.md"
    )
    assert code == 2, stderr
    assert "chekcs" in stderr
    assert "pydantic" in modules


def test_other_arguments_go_to_the_cli(project):
    for arguments in (
        ["check", "--changed-files"],  # no files: every configured spec
        ["check", "--changed-files", "mypkg/ops.py"],
        ["check", "--changed-files", "specs/ops.yaml"],
        ["check", "--changed-files", "README.md", "--format", "json"],
        ["check", "README.md", "--changed-files"],
        ["--version", "check"],
        ["check"],
    ):
        assert quick.answer(arguments) is None, arguments


def test_the_console_script_takes_the_fast_path(project):
    done = subprocess.run(
        [str(SCRIPT), "check", "--changed-files", "README.md"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "1 changed file(s) ignored: not specs in specs, not Python\n"
        "NOTHING CHECKED  0 target(s), 0 case(s), 0 result(s): 0 passed, 0 failed, 0 warning(s)\n"
    )
