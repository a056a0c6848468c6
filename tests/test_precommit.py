"""The pre-commit hook, end to end with the real `pre-commit` and real git repositories.

`pre-commit try-repo REPO` reads the hook definition at REPO's HEAD commit (plus staged and
tracked changes). So that these tests check the `.pre-commit-hooks.yaml` of the working
tree, committed or not, they copy it into a fresh git repository (the "hook repository",
tagged v0.1.0 as the README's snippet pins) and point pre-commit at that; once it is
committed, `pre-commit try-repo <this repository> gradverify --files ...` does the same.
The hook is `language: system`, so it runs the `gradverify` found on PATH: this
environment's, put first on PATH here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PRE_COMMIT = shutil.which("pre-commit", path=str(BIN)) or shutil.which("pre-commit")

DOUBLE = """\
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * {factor}
"""
SPEC = """\
target: ops.double:Double
checks: [forward, backward, finite_difference]
cases:
  - name: vector
    inputs: [{shape: [3]}]
"""


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """This venv's bin first on PATH; git and pre-commit kept away from the user's config."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = gradverify tests\n\temail = tests@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n",
        encoding="utf-8",
    )
    return {
        **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PRE_COMMIT_HOME": str(home / "pre-commit-cache"),
        "NO_COLOR": "1",
    }


def git(cwd: Path, env: dict[str, str], *arguments: str) -> None:
    subprocess.run(["git", *arguments], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory: pytest.TempPathFactory, environment) -> Path:
    """A git repository holding this working tree's .pre-commit-hooks.yaml, tagged v0.1.0."""
    repository = tmp_path_factory.mktemp("hook-repository")
    shutil.copy(ROOT / ".pre-commit-hooks.yaml", repository / ".pre-commit-hooks.yaml")
    git(repository, environment, "init", "-q")
    git(repository, environment, "add", ".pre-commit-hooks.yaml")
    git(repository, environment, "commit", "-q", "-m", "the gradverify hook")
    git(repository, environment, "tag", "v0.1.0")
    return repository


@pytest.fixture
def user_repository(tmp_path: Path, environment, hook_repository) -> Path:
    """A user's project: a Function, its spec, a pre-commit config and a CI workflow."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "ops" / "double.py").write_text(DOUBLE.format(factor=2), encoding="utf-8")
    (tmp_path / "ops" / "unrelated.py").write_text("ANSWER = 42\n", encoding="utf-8")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "double.yaml").write_text(SPEC, encoding="utf-8")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\n", encoding="utf-8")
    # One worker: the hook's run stays light on a test machine.
    (tmp_path / "pyproject.toml").write_text("[tool.gradverify]\njobs = 1\n", encoding="utf-8")
    (tmp_path / ".pre-commit-config.yaml").write_text(
        readme_config(str(hook_repository)), encoding="utf-8"
    )
    git(tmp_path, environment, "init", "-q")
    git(tmp_path, environment, "add", ".")
    git(tmp_path, environment, "commit", "-q", "-m", "a project")
    return tmp_path


def readme_config(repository: str) -> str:
    """The docs' `.pre-commit-config.yaml` snippet, with `repo:` pointing at `repository`."""
    readme = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## pre-commit\n") :]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert snippet, "docs/integrations.md's pre-commit section has a ```yaml snippet"
    text, replaced = re.subn(r"(- repo: )\S+", rf"\g<1>{repository}", snippet.group(1))
    assert replaced == 1
    return text


def pre_commit(repository: Path, env: dict[str, str], *arguments: str):
    assert PRE_COMMIT, "pre-commit is not installed (it is a dev dependency)"
    return subprocess.run(
        [PRE_COMMIT, *arguments],
        cwd=repository,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def try_repo(user: Path, hooks: Path, env: dict[str, str], *files: str):
    return pre_commit(
        user, env, "try-repo", str(hooks), "gradverify", "--verbose", "--files", *files
    )


def test_pre_commit_accepts_the_hook_and_the_readme_config(tmp_path, environment):
    manifest = pre_commit(ROOT, environment, "validate-manifest", ".pre-commit-hooks.yaml")
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(readme_config("https://example.invalid/gradverify"), encoding="utf-8")
    validated = pre_commit(tmp_path, environment, "validate-config", str(config))
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_the_hook_definition():
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "gradverify"
    assert hook["language"] == "system"  # the user's environment: their torch, their code
    assert hook["require_serial"] is True
    assert hook["pass_filenames"] is True
    assert hook["entry"].split()[:2] == ["gradverify", "check"]
    assert set(hook["types_or"]) == {"python", "yaml"}


def test_a_buggy_function_fails_the_hook(user_repository, hook_repository, environment):
    buggy = user_repository / "ops" / "double.py"
    buggy.write_text(DOUBLE.format(factor=3), encoding="utf-8")
    git(user_repository, environment, "add", "ops/double.py")
    completed = try_repo(user_repository, hook_repository, environment, "ops/double.py")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert re.search(r"gradverify\.+Failed", completed.stdout)
    assert "1 Function spec(s) depend on the changed ops/double.py" in completed.stdout
    assert "gradient of argument 0 (x) is wrong" in completed.stdout


def test_a_correct_function_passes_the_hook(user_repository, hook_repository, environment):
    completed = try_repo(
        user_repository, hook_repository, environment, "ops/double.py", "specs/double.yaml"
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert re.search(r"gradverify\.+Passed", completed.stdout)
    assert "PASSED  1 target(s), 1 case(s), 3 result(s)" in completed.stdout


def test_unrelated_changes_run_nothing(user_repository, hook_repository, environment):
    # The Function is buggy, but nothing this commit touches depends on it.
    (user_repository / "ops" / "double.py").write_text(DOUBLE.format(factor=3), encoding="utf-8")
    files = ("ops/unrelated.py", ".github/workflows/ci.yml", ".pre-commit-config.yaml")
    completed = try_repo(user_repository, hook_repository, environment, *files)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert re.search(r"gradverify\.+Passed", completed.stdout)
    assert "no spec in specs depends on the changed ops/unrelated.py" in completed.stdout
    assert "2 changed file(s) ignored" in completed.stdout
    assert "0 result(s)" in completed.stdout


def test_the_readme_config_on_a_commit(user_repository, environment):
    """`git commit` through the hook installed from the README's snippet (rev: v0.1.0)."""
    install = pre_commit(user_repository, environment, "install")
    assert install.returncode == 0, install.stdout + install.stderr
    buggy = user_repository / "ops" / "double.py"
    buggy.write_text(DOUBLE.format(factor=3), encoding="utf-8")
    git(user_repository, environment, "add", "ops/double.py")
    refused = subprocess.run(
        ["git", "commit", "-m", "a wrong backward"],
        cwd=user_repository,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode != 0, "the commit of a wrong backward went through"
    assert "gradient of argument 0 (x) is wrong" in refused.stdout + refused.stderr
    commits = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"],
        cwd=user_repository,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert commits.stdout.strip() == "1"
