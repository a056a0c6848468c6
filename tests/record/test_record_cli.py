"""`gradverify record -- COMMAND` and `pytest --gradverify-record`, as real processes on a
project in a temporary directory: the specs they write, what `check` makes of them (the
command run in this process, sharing its fork server), and that recording again never
touches a case that is there."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gradverify.cli import app
from tests.conftest import ROOT
from tests.record.recording import GRADVERIFY, record, run, spec

# Five Functions and ops, two with a bundled bug; one is called from a child process, one
# takes an int64 index tensor, and Linear's inputs are large enough to be shrunk.
SCRIPT = """\
import subprocess, sys
import torch
from gradverify.examples.buggy import ClippedReLUForgotMask, LinearTransposedWeightGrad
from gradverify.examples.custom_ops import scaled_pow
from tests.functions.structure_hints import Embedding

x = torch.linspace(-3.0, 3.0, 8, requires_grad=True)
for _ in range(3):  # one signature: one case
    ClippedReLUForgotMask.apply(x, 1.0)
scaled_pow(torch.linspace(0.5, 2.0, 6, requires_grad=True), 2.0, 3)
LinearTransposedWeightGrad.apply(torch.randn(4, 3, requires_grad=True), torch.randn(3, 3, requires_grad=True))
weight = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
Embedding.apply(weight, torch.tensor([1, 3, 3, 9, 0, 2])).sum().backward()
subprocess.run([sys.executable, "child.py"], check=True)
"""
CHILD = """\
import torch
from gradverify.examples.linear import Linear

big = torch.randn(256, 128, dtype=torch.float64, requires_grad=True)
weight = torch.randn(64, 128, dtype=torch.float64, requires_grad=True)
Linear.apply(big, weight, None).sum().backward()
"""


def check(project: Path, monkeypatch: pytest.MonkeyPatch, *arguments: str):
    """`gradverify check ARGUMENTS` from the project's directory, in this process."""
    monkeypatch.chdir(project)
    monkeypatch.setenv("NO_COLOR", "1")
    return CliRunner().invoke(app, ["check", *arguments])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("project")
    (project / "script.py").write_text(SCRIPT)
    (project / "child.py").write_text(CHILD)
    record(project)
    return project


def test_record_writes_a_spec_per_function(recorded: Path) -> None:
    written = sorted(path.name for path in (recorded / "specs").iterdir())
    assert written == [
        "clipped_relu_forgot_mask.yaml", "embedding.yaml", "linear.yaml",
        "linear_transposed_weight_grad.yaml", "scaled_pow.yaml",
    ]  # fmt: skip
    clipped = spec(recorded, "clipped_relu_forgot_mask.yaml")
    assert clipped["target"] == "gradverify.examples.buggy:ClippedReLUForgotMask"
    case, *added = clipped["cases"]  # three calls of one signature: one recorded case
    assert added and all(other["name"].startswith("script_py_9: ") for other in added)
    assert case["name"] == "script_py_9"
    assert case["inputs"] == [{"shape": [8], "dtype": "float32", "low": -3.06, "high": 3.06}, 1.0]
    op = spec(recorded, "scaled_pow.yaml")
    assert op["target"] == "gradverify.examples.custom_ops:gradverify_examples::scaled_pow"
    # Recorded in (0.5, 2]: the range is widened, but never across zero.
    assert op["cases"][0]["inputs"][0]["low"] > 0


def test_a_small_index_tensor_is_kept_as_values(recorded: Path) -> None:
    [case] = spec(recorded, "embedding.yaml")["cases"]
    assert case["inputs"][1] == {"values": [1, 3, 3, 9, 0, 2], "dtype": "int64"}
    assert case["inputs"][0]["shape"] == [10, 4]


def test_a_large_shape_is_shrunk_and_still_passes(recorded: Path, monkeypatch) -> None:
    case = spec(recorded, "linear.yaml")["cases"][0]
    assert case["name"] == "child_py_6"  # recorded in the child process
    shapes = [item["shape"] for item in case["inputs"][:2]]
    assert sum(math.prod(shape) for shape in shapes) <= 4096 < 256 * 128 + 64 * 128
    assert shapes[0][1] == shapes[1][1]  # the shared dimension shrunk together
    completed = check(recorded, monkeypatch, "specs/linear.yaml", "--no-cache")
    assert completed.exit_code == 0, completed.output


def test_check_fails_exactly_where_the_bundled_bugs_are(recorded: Path, monkeypatch) -> None:
    completed = check(recorded, monkeypatch, "specs", "--format", "json", "--no-cache")
    assert completed.exit_code == 1, completed.stderr
    report = json.loads(completed.stdout)
    failed = {
        (result["target"].rpartition(":")[2], result["input_index"])
        for result in report["results"]
        if result["status"] == "fail"
    }
    assert failed == {("ClippedReLUForgotMask", 0), ("LinearTransposedWeightGrad", 1)}
    targets = {result["target"] for result in report["results"]}
    assert len(targets) == 5


def test_recording_again_leaves_cases_alone(recorded: Path, tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "child.py").write_text(CHILD)
    shutil.copytree(recorded / "specs", tmp_path / "specs")  # as the first recording wrote them
    path = tmp_path / "specs" / "scaled_pow.yaml"
    edited = path.read_text().replace("dtype: float32", "dtype: float64")
    edited = edited.replace("- 2.0 ", "- 0.5 ")
    path.write_text(edited)
    before = {file.name: file.read_text() for file in (tmp_path / "specs").iterdir()}
    # -X importtime: the modules the command's own process imports (its children's are not
    # listed), to the same stderr.
    command = (sys.executable, "-X", "importtime", "-m", "gradverify", "record", "--")
    completed = run(tmp_path, *command, sys.executable, "script.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    after = {file.name: file.read_text() for file in (tmp_path / "specs").iterdir()}
    assert after == before  # the edited case untouched, nothing duplicated, no file added
    assert "kept gradverify.examples.custom_ops:gradverify_examples::scaled_pow" in completed.stdout
    # Nothing new to write: the command never imports torch (the recorded script does).
    imported = re.findall(r"^import time:.*\| +(\S+)$", completed.stderr, re.MULTILINE)
    assert "gradverify.record.run" in imported and "torch" not in imported


def test_a_new_signature_is_appended_to_a_hand_written_spec(tmp_path: Path) -> None:
    hand_written = textwrap.dedent("""\
        # my own spec, in another spelling of the target
        functions:
          - target: gradverify/examples/buggy.py:ClippedReLUForgotMask
            cases:
              - name: mine
                inputs:
                  - {shape: [4], low: -2.0, high: 2.0}   # keep this comment
                  - 1.0
          - target: gradverify.examples.swish:Swish
            cases:
              - name: other
                inputs: [{shape: [3]}, {shape: []}]
        """)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "mine.yaml").write_text(hand_written)
    (tmp_path / "gradverify").symlink_to(ROOT / "gradverify")  # the file spelling resolves
    (tmp_path / "script.py").write_text(
        "import torch\nfrom gradverify.examples.buggy import ClippedReLUForgotMask\n"
        "ClippedReLUForgotMask.apply(torch.randn(2, 3, requires_grad=True), 0.5)\n"
    )
    record(tmp_path)
    assert sorted(path.name for path in (tmp_path / "specs").iterdir()) == ["mine.yaml"]
    text = (tmp_path / "specs" / "mine.yaml").read_text()
    first, _, rest = hand_written.partition("  - target: gradverify.examples.swish")
    assert text.startswith(first) and text.endswith("  - target: gradverify.examples.swish" + rest)
    cases = yaml.safe_load(text)["functions"][0]["cases"]
    assert [case["name"] for case in cases][:2] == ["mine", "script_py_3"]
    assert all(case["name"].startswith("script_py_3: ") for case in cases[2:])  # added to it
    assert cases[1]["inputs"][0]["shape"] == [2, 3]


def test_pytest_gradverify_record_writes_specs(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent("""\
        import torch
        from gradverify.examples.activations import ClippedReLU

        def test_clip():
            x = torch.randn(6, 5, requires_grad=True)
            ClippedReLU.apply(x, 0.5).sum().backward()
        """)
    )
    completed = run(
        tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "--gradverify-record", "test_mine.py",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "wrote specs/clipped_relu.yaml" in completed.stdout
    case = spec(tmp_path, "clipped_relu.yaml")["cases"][0]
    assert case["name"] == "test_mine_py_6"
    assert case["inputs"][0]["shape"] == [6, 5] and case["inputs"][1] == 0.5


def test_an_existing_sitecustomize_still_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['THEIRS'] = 'ran'\n")
    (tmp_path / "script.py").write_text("import os\nassert os.environ['THEIRS'] == 'ran'\n")
    environment = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    completed = subprocess.run(
        [str(GRADVERIFY), "record", "--", sys.executable, "script.py"],
        cwd=tmp_path, capture_output=True, text=True, env=environment, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "no call of a torch.autograd.Function" in completed.stdout


def test_a_command_that_cannot_run_is_a_usage_error(tmp_path: Path) -> None:
    completed = run(tmp_path, str(GRADVERIFY), "record", "--", "no-such-command-here")
    assert completed.returncode == 2
    assert "cannot run 'no-such-command-here'" in completed.stderr


def test_specs_dir_writes_there_though_a_spec_names_the_target(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "script.py").write_text(
        "import torch\nfrom gradverify.examples.activations import ClippedReLU\n"
        "ClippedReLU.apply(torch.randn(2, 3, requires_grad=True), 0.5)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    command = ["record", "--", sys.executable, "script.py"]
    assert CliRunner().invoke(app, command).exit_code == 0
    before = (tmp_path / "specs" / "clipped_relu.yaml").read_text()
    completed = CliRunner().invoke(app, ["record", "--specs", "again", *command[1:]])
    assert completed.exit_code == 0, completed.output
    assert "wrote again/clipped_relu.yaml" in completed.output
    assert yaml.safe_load((tmp_path / "again" / "clipped_relu.yaml").read_text())["cases"]
    assert (tmp_path / "specs" / "clipped_relu.yaml").read_text() == before
