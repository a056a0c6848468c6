"""No process outlives the command: workers and the fork server are reaped, on a normal exit
and on Ctrl-C alike. The real console script runs in a subprocess whose environment carries a
marker that every process it starts inherits; /proc then shows what is left. The test process
is made a child subreaper, so that a process the command did not reap itself is adopted by the
test, and stays visible (if only as a zombie) however quickly it would have ended.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tests" / "specs" / "processes"
GRADVERIFY = str(Path(sys.executable).parent / "gradverify")
MARKER = "GRADVERIFY_REAPING_TEST"
PR_SET_CHILD_SUBREAPER = 36

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def marked(marker: str) -> dict[int, int]:
    """Every process whose environment carries `marker`, and every child of this test process
    that is not one of `before`'s: pid -> ppid. (A zombie's environ reads empty.)"""
    found: dict[int, int] = {}
    needle = f"{MARKER}={marker}".encode()
    for pid, (ppid, environ) in _processes().items():
        if needle in environ.split(b"\0") or (ppid == os.getpid() and pid not in _before):
            found[pid] = ppid
    return found


def _processes() -> dict[int, tuple[int, bytes]]:
    processes = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # a zombie's, or not ours to read
            environ = b""
        processes[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), environ)
    return processes


_before: set[int] = set()


@pytest.fixture(autouse=True)
def adopt_orphans() -> Iterator[None]:
    """Make this process a child subreaper for the test; reap whatever it adopted after."""
    _before.clear()
    _before.update(pid for pid, (ppid, _) in _processes().items() if ppid == os.getpid())
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("cannot become a child subreaper")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid, (ppid, _) in _processes().items():
            if ppid == os.getpid() and pid not in _before:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def start(spec: Path, marker: str, own_group: bool = False) -> subprocess.Popen[bytes]:
    environment = {**os.environ, MARKER: marker}
    command = [GRADVERIFY, "check", str(spec), "--no-cache", "-j", "2"]
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=own_group,
    )  # fmt: skip


def wait_for(condition: object, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not callable(condition) or not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_a_normal_exit_leaves_no_process_behind() -> None:
    marker = uuid.uuid4().hex
    process = start(SPECS / "two_correct.yaml", marker)
    seen: set[int] = set()
    while process.poll() is None:
        seen.update(pid for pid, ppid in marked(marker).items() if pid != process.pid)
        time.sleep(0.05)
    process.communicate()
    assert process.returncode == ExitCode.OK
    assert seen, "the run started no process of its own: nothing was tested"
    assert marked(marker) == {}


@pytest.mark.parametrize("to_group", [False, True], ids=["to_the_command", "to_its_group"])
def test_ctrl_c_mid_case_exits_130_and_leaves_no_process_behind(to_group: bool) -> None:
    """SIGINT to the command alone, and to its whole process group as a terminal's Ctrl-C."""
    marker = uuid.uuid4().hex
    process = start(SPECS / "slow.yaml", marker, own_group=to_group)
    try:
        # A worker is a grandchild of the command (forked by the server) or, where workers
        # are spawned, a child: anything marked besides the command itself and the server.
        wait_for(lambda: len(marked(marker)) >= 3)
        if to_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == ExitCode.INTERRUPTED
    assert b"interrupted" in stderr
    assert b"Traceback" not in stderr  # no worker printed a KeyboardInterrupt
    assert marked(marker) == {}


# (delay in s, Ctrl-C's, to the process group): from before Python has started to mid-run, once
# and twice 10 ms apart (an impatient user, `timeout -s INT`), to the command alone and to its
# group as a terminal sends it. At 0 s the fork server is not started yet; from about 0.3 s it
# is importing torch; from about 1 s workers run cases.
SWEEP = [
    (0.0, 1, False), (0.0, 2, True), (0.2, 2, False), (0.3, 1, True),
    (0.45, 2, True), (0.6, 1, False), (0.8, 2, False), (1.0, 1, True),
    (1.5, 2, True), (2.0, 1, False), (2.5, 2, False), (3.0, 2, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("delay", "count", "to_group"),
    SWEEP,
    ids=[
        f"{d}s-{'double' if n == 2 else 'single'}-{'group' if g else 'command'}"
        for d, n, g in SWEEP
    ],
)
def test_ctrl_c_at_any_moment_exits_130_quietly_and_leaves_no_process_behind(
    delay: float, count: int, to_group: bool
) -> None:
    """One or two Ctrl-C's at any moment of a real run over the bundled specs: exit 130, no
    traceback from the command, the fork server or a worker, and nothing left running."""
    marker = uuid.uuid4().hex
    process = start(ROOT / "specs", marker, own_group=to_group)
    try:
        time.sleep(delay)
        if process.poll() is not None:
            pytest.skip(f"the run ended within {delay} s, before the Ctrl-C")
        for sent in range(count):
            if sent:
                time.sleep(0.01)
            if to_group:
                os.killpg(process.pid, signal.SIGINT)
            else:
                process.send_signal(signal.SIGINT)
        # A guard against a hang, no more; a Ctrl-C that CPython lost while starting (at 0 s)
        # leaves the whole run to finish, which takes longer on a busy machine.
        stdout, stderr = process.communicate(timeout=120 if delay == 0 else 10)
    finally:
        if process.poll() is None:
            process.kill()
    assert marked(marker) == {}
    output = stdout + stderr
    # At 0 s the SIGINT lands while CPython starts, before any gradverify code runs: the
    # kernel's default action (status -SIGINT, which a shell reports as 130 too), CPython's
    # own KeyboardInterrupt traceback from its start-up imports, or, in the moment its handler
    # is being installed, nothing at all (the run then ends as it would have). None of that
    # is the command's, but a traceback through gradverify's code would be.
    if delay == 0 and process.returncode != ExitCode.INTERRUPTED:
        assert f"{ROOT / 'gradverify'}/".encode() not in stderr, stderr.decode(errors="replace")
        return
    for word in (b"Traceback", b"Exception ignored", b"KeyboardInterrupt"):
        assert word not in output, output.decode(errors="replace")
    assert process.returncode == ExitCode.INTERRUPTED, stderr.decode(errors="replace")
    assert b"interrupted" in stderr
