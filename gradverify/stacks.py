"""Which frames are the user's code, and where a stuck worker was: torch-free, so that the
parent process can read a worker's stack dump (faulthandler's text) without importing torch.

A worker registers `dump_on(SIGNAL)` at start; at a timeout the parent sends SIGNAL, reads the
dump back from the worker's file and names the innermost frame of the user's code.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib.util
import os
import re
import signal
import sysconfig
import tempfile
import time
import traceback
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO

from gradverify.target.paths import user_path

SIGNAL = signal.SIGUSR1
# How long the parent waits for a stuck worker's dump before killing it anyway.
DUMP_WAIT = 1.0
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_EXAMPLES_DIR = str(Path(_PACKAGE_DIR) / "examples")
_STDLIB_DIR = str(Path(sysconfig.get_paths()["stdlib"]).resolve())
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<function>.+)$')


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    @property
    def location(self) -> str:
        return f"{user_path(self.file)}:{self.line}"


def is_user_frame(filename: str) -> bool:
    """Whether a traceback frame is the user's code: not gradverify's, torch's or Python's own
    (an argument missing from a case raises inside the standard library's `inspect`)."""
    if filename.startswith(_EXAMPLES_DIR):  # the bundled examples are user code too
        return True
    if filename.startswith(_STDLIB_DIR) and not _in_site_packages(filename):
        return False
    return not filename.startswith((_PACKAGE_DIR, _torch_dir(), "<"))


@cache
def _torch_dir() -> str:
    """torch's package directory, found without importing torch."""
    found = importlib.util.find_spec("torch")
    origin = found.origin if found is not None else None
    return str(Path(origin).resolve().parent) if origin else "<no torch>"


def _in_site_packages(filename: str) -> bool:
    parts = Path(filename).parts
    return "site-packages" in parts or "dist-packages" in parts


def user_frames(error: BaseException) -> list[str]:
    """The frames of the user's code in the error's traceback, and the error's last line."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_user_frame(f.filename)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
    return [line.rstrip("\n") for line in "".join(lines).splitlines()]


def last_user_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the user's code in the error's traceback, if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_user_frame(f.filename)]
    return frames[-1] if frames else None


def innermost_user_frame(dump: str) -> Frame | None:
    """The most recent frame of the user's code in faulthandler's dump (most recent first)."""
    for line in dump.splitlines():
        match = _FRAME.match(line)
        if match and is_user_frame(match["file"]):
            return Frame(match["file"], int(match["line"]), match["function"].strip())
    return None


def dump_on_signal() -> str:
    """In a worker: dump every thread's stack to a file of its own on SIGNAL; its path."""
    handle: IO[str] = tempfile.NamedTemporaryFile(  # noqa: SIM115 - open for the worker's life
        "w", prefix="gradverify-stack-", suffix=".txt", delete=False
    )
    faulthandler.register(SIGNAL, file=handle, all_threads=True, chain=False)
    return handle.name


def stack_of(pid: int, path: str) -> str:
    """Ask the worker `pid` for its stack dump and read it from `path` (its dump_on_signal
    file); "" when it does not come within DUMP_WAIT. The file is removed."""
    try:
        os.kill(pid, SIGNAL)
    except (ProcessLookupError, PermissionError):
        return ""
    deadline = time.monotonic() + DUMP_WAIT
    text, size = "", -1
    while time.monotonic() < deadline:
        time.sleep(0.02)
        with contextlib.suppress(OSError):
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        if text and len(text) == size:  # written, and no longer growing
            break
        size = len(text)
    return text


def remove(path: str | None) -> None:
    """Remove a worker's dump file (it ended, or was killed)."""
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)
