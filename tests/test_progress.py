"""The progress bar: on a terminal after a second; never in piped or machine-readable output."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from gradverify.run.progress import DELAY, DelayedBar, progress_listener

ROOT = Path(__file__).resolve().parents[1]


def test_nothing_is_written_when_output_is_not_a_terminal():
    gradverify = Path(sys.executable).parent / "gradverify"
    done = subprocess.run(
        [str(gradverify), "check", "specs/examples.yaml", "--no-cache", "-j", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "\x1b[" not in done.stdout


def test_a_disabled_listener_is_none():
    with progress_listener(enabled=False) as listener:
        assert listener is None


def test_the_bar_starts_only_after_the_delay(monkeypatch):
    bar = DelayedBar(total=2)
    task = SimpleNamespace(entry=SimpleNamespace(spec=SimpleNamespace(target="m:F")), case="c")
    bar.listen(task, "check", "forward")
    assert bar.progress is None  # a short run never shows a bar
    monkeypatch.setattr(time, "monotonic", lambda: bar.started + DELAY + 0.1)
    bar.listen(task, "done", None)
    assert bar.progress is not None
    assert bar.finished == 1
    bar.stop()
