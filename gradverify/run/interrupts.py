"""Ctrl-C belongs to the command, not to its children, and is never lost nor doubled.

The console script installs a SIGINT handler first thing (`install`). It raises
KeyboardInterrupt only inside the command's own work (`armed`), and only once: a second Ctrl-C
(an impatient user, `timeout -s INT`) is counted, not raised, so the cleanup that the first one
started (killing workers, stopping the fork server) is never cut short with a traceback. A
Ctrl-C is also remembered: Python drops a KeyboardInterrupt raised while a weakref callback or
a `__del__` runs ("Exception ignored in ..."), so the run's checkpoints (`checkpoint`) raise it
again, and a Ctrl-C that came while the command was exiting still makes its exit code 130.

Child processes never see SIGINT: they are started with it blocked (`deferred`), so a Ctrl-C
sent to the whole process group, as a terminal sends it, waits until the child ignores it
(`ignore_in_child`), even while the child is still importing. The parent then ends them.
Without `install` (the Python API, the pytest plugin) Python's own handler stays in place.
"""

from __future__ import annotations

import contextlib
import signal

# The console script imports this module before it owns Ctrl-C: only what install needs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

_installed = False
_received = 0  # SIGINTs since install
_armed = False  # inside the command's work: a Ctrl-C ends it
_deferring = False  # starting a child or stopping the fork server: a Ctrl-C waits


def install() -> None:
    """Own SIGINT in this process (the console script's main thread)."""
    global _installed
    signal.signal(signal.SIGINT, _on_sigint)
    _installed = True


def received() -> bool:
    """Whether a Ctrl-C has come since `install`."""
    return _received > 0


def release() -> bool:
    """Ignore SIGINT from now on, as the command ends; whether a Ctrl-C came before.

    Python restores SIGINT's default action while it tears itself down, after the exit code
    is decided: a Ctrl-C then would kill the process (status -2 instead of the code).
    An ignored signal stays ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return received()


@contextlib.contextmanager
def armed() -> Iterator[None]:
    """The command's work: a Ctrl-C, now or earlier, raises KeyboardInterrupt in it."""
    global _armed
    _armed = _installed
    try:
        checkpoint()
        yield
        checkpoint()
    finally:
        _armed = False


def checkpoint() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came during the command's work and was swallowed."""
    if _armed and _received:
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends; a child process started here begins with SIGINT
    blocked, and keeps it blocked until it ignores it (`ignore_in_child`)."""
    global _deferring
    mask = getattr(signal, "pthread_sigmask", None)
    previous = mask(signal.SIG_BLOCK, {signal.SIGINT}) if mask else None
    deferring, _deferring = _deferring, True
    try:
        yield
    finally:
        _deferring = deferring
        if mask is not None and previous is not None:
            mask(signal.SIG_SETMASK, previous)
    if not _deferring:
        checkpoint()


def ignore_in_child() -> None:
    """In a child process: ignore SIGINT (dropping one that waits), then unblock it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _received
    _received += 1
    if _armed and not _deferring and _received == 1:
        raise KeyboardInterrupt
