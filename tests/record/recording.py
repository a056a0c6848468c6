"""`gradverify record` as a real process, on a project in a temporary directory that imports
tests.functions from the repository, and the specs it writes there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT

GRADVERIFY = Path(sys.executable).parent / "gradverify"


def run(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """COMMAND in `project`, the repository importable, without colour."""
    environment = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        command, cwd=project, capture_output=True, text=True, env=environment, timeout=300
    )


def record(project: Path) -> subprocess.CompletedProcess[str]:
    """`gradverify record -- python script.py` in `project`, which must succeed."""
    completed = run(project, str(GRADVERIFY), "record", "--", sys.executable, "script.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed


def spec(project: Path, name: str) -> dict:
    """The spec `name` that record wrote in `project`'s specs/."""
    return yaml.safe_load((project / "specs" / name).read_text())
