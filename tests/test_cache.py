"""The cache: unchanged passing cases come from it; a change to the source runs them again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradverify.run import session
from gradverify.spec.load import load_spec_file
from gradverify.spec.source_files import source_files

FUNCTION = """
import torch
from mypkg.helpers import twice


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return twice(x)

    @staticmethod
    def backward(ctx, grad_output):
        return twice(grad_output)
"""

SPEC = """
target: mypkg.ops:Double
checks: [forward, backward, finite_difference]
cases: [{name: vector, inputs: [{shape: [3]}]}]
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("def twice(x):\n    return x * 2\n")
    (package / "ops.py").write_text(textwrap.dedent(FUNCTION))
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SPEC))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        monkeypatch.delitem(sys.modules, name)
    return tmp_path


def run(project: Path):
    entries = load_spec_file(project / "spec.yaml")
    options = session.RunOptions(isolation=False, cache_dir=project / ".gradverify_cache")
    return session.run(entries, options)


def test_an_unchanged_case_is_reported_from_the_cache(project):
    first = run(project)
    assert [r.cached for r in first.results] == [False, False, False]
    second = run(project)
    assert [r.cached for r in second.results] == [True, True, True]
    assert [r.status.value for r in second.results] == ["pass", "pass", "pass"]
    assert (project / ".gradverify_cache" / ".gitignore").read_text().strip().endswith("*")


@pytest.mark.parametrize(
    ("changed", "old", "new"),
    [
        ("mypkg/ops.py", "return twice(x)", "return twice(x) + 0"),
        ("mypkg/helpers.py", "return x * 2", "return x + x"),
        ("mypkg/ops.py", "return twice(x)", "return twice(x)  # a comment inside the Function"),
        ("spec.yaml", "cases:", "seed: 3\ncases:"),
    ],
)
def test_a_change_to_the_source_its_imports_or_the_spec_runs_it_again(project, changed, old, new):
    run(project)
    text = (project / changed).read_text()
    (project / changed).write_text(text.replace(old, new))
    for name in [m for m in sys.modules if m.startswith("mypkg")]:
        del sys.modules[name]
    again = run(project)
    assert not any(r.cached for r in again.results)


def test_a_comment_in_the_spec_keeps_the_cache(project):
    run(project)
    with (project / "spec.yaml").open("a") as file:
        file.write("\n# only a comment\n")
    assert all(r.cached for r in run(project).results)


def test_a_failing_case_is_never_cached(project):
    ops = project / "mypkg" / "ops.py"
    ops.write_text(ops.read_text().replace("return twice(grad_output)", "return grad_output"))
    run(project)
    again = run(project)
    assert not any(r.cached for r in again.results)
    assert any(r.status.value == "fail" for r in again.results)


def test_source_files_follow_project_imports_only(project):
    files = source_files("mypkg.ops:Double", project)
    names = sorted(str(f.relative_to(project.resolve())) for f in files)
    assert names == ["mypkg/__init__.py", "mypkg/helpers.py", "mypkg/ops.py"]


def test_a_cached_run_does_not_import_torch(project):
    run(project)  # fills the cache
    code = (
        "import sys\n"
        "from gradverify.cli import main\n"
        "sys.argv = ['gradverify', 'check', 'spec.yaml', '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print('TORCH', 'torch' in sys.modules, code, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(project)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "TORCH False 0" in done.stderr, done.stderr
    assert '"cached": true' in done.stdout
