"""The pre-commit hook, end to end with the real `pre-commit` and real git repositories.

The README's `.pre-commit-config.yaml` (a `repo: local` hook) is written into a user's
project exactly as printed, and run with `pre-commit run` and through `git commit`.
The remote form in docs/integrations.md (`repo:` a fork or mirror of gradverify, `rev:` a
tag pushed there) is run against a fresh git repository holding this working tree's
`.pre-commit-hooks.yaml`, tagged, so that the hook definition is checked whether committed
or not; `pre-commit try-repo` points at that repository too. The hook is `language: system`,
so it runs the `gradverify` found on PATH: this environment's, put first on PATH here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
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


TAG = "v-test-1"  # any tag pushed to the hook repository


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory: pytest.TempPathFactory, environment) -> Path:
    """A git repository holding this working tree's .pre-commit-hooks.yaml, tagged TAG."""
    repository = tmp_path_factory.mktemp("hook-repository")
    shutil.copy(ROOT / ".pre-commit-hooks.yaml", repository / ".pre-commit-hooks.yaml")
    git(repository, environment, "init", "-q")
    git(repository, environment, "add", ".pre-commit-hooks.yaml")
    git(repository, environment, "commit", "-q", "-m", "the gradverify hook")
    git(repository, environment, "tag", TAG)
    return repository


@pytest.fixture
def user_repository(tmp_path: Path, environment) -> Path:
    """A user's project: a Function, its spec, the README's pre-commit config, a CI workflow."""
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
    (tmp_path / ".pre-commit-config.yaml").write_text(readme_config(), encoding="utf-8")
    git(tmp_path, environment, "init", "-q")
    git(tmp_path, environment, "add", ".")
    git(tmp_path, environment, "commit", "-q", "-m", "a project")
    return tmp_path


def yaml_blocks(page: str, heading: str) -> list[str]:
    """The ```yaml blocks of `page`'s section under `heading`, dedented as they render."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    following = re.search(r"\n#{1,2} ", section[len(heading) :])
    if following is not None:
        section = section[: len(heading) + following.start()]
    blocks = re.findall(r"^( *)```yaml\n(.*?)^ *```", section, re.DOTALL | re.M)
    return [textwrap.dedent(block) for _, block in blocks]


def readme_config() -> str:
    """The README's `.pre-commit-config.yaml`, exactly as printed."""
    [config] = yaml_blocks("README.md", "- **pre-commit**")
    return config


def remote_config(repository: str, rev: str) -> str:
    """docs/integrations.md's remote form, its `<...>` placeholders filled in."""
    local, remote = yaml_blocks("docs/integrations.md", "\n## pre-commit\n")
    assert local == readme_config(), "the docs show the README's config first"
    text, replaced = re.subn(r"(- repo: )<[^>\n]+>", rf"\g<1>{repository}", remote)
    text, revs = re.subn(r"(rev: )<[^>\n]+>", rf"\g<1>{rev}", text)
    assert (replaced, revs) == (1, 1), remote
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


def test_pre_commit_accepts_the_hook_and_the_docs_configs(tmp_path, environment):
    manifest = pre_commit(ROOT, environment, "validate-manifest", ".pre-commit-hooks.yaml")
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    configs = {"local": readme_config(), "remote": remote_config("https://example.invalid", TAG)}
    for name, text in configs.items():
        config = tmp_path / f"{name}.yaml"
        config.write_text(text, encoding="utf-8")
        validated = pre_commit(tmp_path, environment, "validate-config", str(config))
        assert validated.returncode == 0, (name, validated.stdout + validated.stderr)


def test_the_hook_definition():
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "gradverify"
    assert hook["language"] == "system"  # the user's environment: their torch, their code
    assert hook["require_serial"] is True
    assert hook["pass_filenames"] is True
    assert hook["entry"].split()[:2] == ["gradverify", "check"]
    assert set(hook["types_or"]) == {"python", "yaml"}


def test_the_readme_hook_is_the_hook_definition():
    [repository] = yaml.safe_load(readme_config())["repos"]
    assert repository["repo"] == "local"  # needs no remote, no rev: works as pasted
    [local] = repository["hooks"]
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    for key in ("id", "name", "entry", "language", "types_or", "require_serial"):
        assert local[key] == hook[key], key
    assert local.get("pass_filenames", True) == hook["pass_filenames"]


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


def run_all_files(repository: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return pre_commit(repository, env, "run", "--all-files", "--verbose")


@pytest.mark.parametrize(("factor", "code"), [(2, 0), (3, 1)], ids=["correct", "buggy"])
def test_the_readme_config_as_printed(user_repository, environment, factor, code):
    """The README's snippet, pasted as it is: `pre-commit run` needs only the installed
    gradverify (no remote, no rev), and passes a correct Function and fails a buggy one."""
    double = user_repository / "ops" / "double.py"
    double.write_text(DOUBLE.format(factor=factor), encoding="utf-8")
    git(user_repository, environment, "add", "ops/double.py")
    completed = run_all_files(user_repository, environment)
    assert completed.returncode == code, completed.stdout + completed.stderr
    assert re.search(r"gradverify\.+" + ("Passed" if code == 0 else "Failed"), completed.stdout)
    wrong = "gradient of argument 0 (x) is wrong" in completed.stdout
    assert wrong == (code == 1)


@pytest.mark.parametrize(("factor", "code"), [(2, 0), (3, 1)], ids=["correct", "buggy"])
def test_the_remote_form_at_a_pushed_tag(
    user_repository, hook_repository, environment, factor, code
):
    """docs/integrations.md's remote form, with `repo:` a mirror and `rev:` a tag in it."""
    config = user_repository / ".pre-commit-config.yaml"
    config.write_text(remote_config(str(hook_repository), TAG), encoding="utf-8")
    double = user_repository / "ops" / "double.py"
    double.write_text(DOUBLE.format(factor=factor), encoding="utf-8")
    git(user_repository, environment, "add", ".pre-commit-config.yaml", "ops/double.py")
    completed = run_all_files(user_repository, environment)
    assert completed.returncode == code, completed.stdout + completed.stderr
    assert re.search(r"gradverify\.+" + ("Passed" if code == 0 else "Failed"), completed.stdout)


def commit(repository: Path, env: dict[str, str], message: str):
    return subprocess.run(
        ["git", "commit", "-m", message],
        cwd=repository,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def commit_count(repository: Path, env: dict[str, str]) -> int:
    counted = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"],
        cwd=repository,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(counted.stdout)


def test_the_readme_config_on_a_commit(user_repository, environment):
    """`git commit` through the hook `pre-commit install` sets up from the README's snippet."""
    install = pre_commit(user_repository, environment, "install")
    assert install.returncode == 0, install.stdout + install.stderr
    double = user_repository / "ops" / "double.py"
    double.write_text(DOUBLE.format(factor=3), encoding="utf-8")
    git(user_repository, environment, "add", "ops/double.py")
    refused = commit(user_repository, environment, "a wrong backward")
    assert refused.returncode != 0, "the commit of a wrong backward went through"
    assert "gradient of argument 0 (x) is wrong" in refused.stdout + refused.stderr
    assert commit_count(user_repository, environment) == 1
    double.write_text(DOUBLE.format(factor=2) + "# fixed\n", encoding="utf-8")
    git(user_repository, environment, "add", "ops/double.py")
    accepted = commit(user_repository, environment, "the backward fixed")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert commit_count(user_repository, environment) == 2
