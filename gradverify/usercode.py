"""Calling the user's code: the phase it is in, and its exceptions as UserCodeError with the
user's frames (the lowest layer: inputs, inference and every check use it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gradverify.memory import is_allocation_failure, out_of_memory
from gradverify.stacks import last_user_frame, user_frames
from gradverify.target.paths import user_path


class UserCodeError(Exception):
    """The user's forward or backward raised; a failure of the check, not of the run."""

    def __init__(self, phase: str, error: BaseException) -> None:
        self.phase = phase
        self.error = error
        self.frame = last_user_frame(error)
        self.location = (
            f"{user_path(self.frame.filename)}:{self.frame.lineno}" if self.frame else None
        )
        where = f" at {self.location}" if self.location else ""
        if is_allocation_failure(error):
            super().__init__(f"{phase} ran out of memory{where}: {out_of_memory(error)}")
            return
        super().__init__(f"{phase} raised {type(error).__name__}{where}: {first_line(error)}")

    @property
    def frames(self) -> tuple[str, ...]:
        return tuple(user_frames(self.error))

    @property
    def source(self) -> dict[str, Any]:
        """Result fields pointing at the user's line that raised (none if no frame is the
        user's): a crash of forward in a check about backward is forward's, not backward's."""
        if self.frame is None:
            return {}
        return {"source_file": self.frame.filename, "source_line": self.frame.lineno}


# A worker process listens to phases, so that a crash or a timeout can say where it happened.
_phase_listener: Callable[[str], None] | None = None


def listen_to_phases(listener: Callable[[str], None] | None) -> None:
    """Call `listener(phase)` whenever the user's code is entered ("forward", "backward", ...)."""
    global _phase_listener
    _phase_listener = listener


@contextmanager
def user_code(phase: str) -> Iterator[None]:
    """Run the user's code, turning any exception it raises into UserCodeError."""
    if _phase_listener is not None:
        _phase_listener(phase)
    try:
        yield
    except UserCodeError:
        raise
    except Exception as error:
        raise UserCodeError(phase, error) from error


def call_forward(call: Callable[..., Any], arguments: Sequence[Any]) -> tuple[Any, ...]:
    """Run forward and return its outputs as a tuple.

    forward leaves the CPU's global random generator as it found it, so that the calls of
    one check draw the same random numbers (a sample `loc + eps @ L.T`, a dropout mask):
    finite differences measure forward's derivative under those numbers, not their noise
    (common random numbers). A check that wants other numbers seeds them itself (layouts)."""
    import torch

    state = torch.random.get_rng_state()
    try:
        with user_code("forward"):
            outputs = call(*arguments)
    finally:
        torch.random.set_rng_state(state)
    return outputs if isinstance(outputs, tuple) else (outputs,)


def first_line(error: BaseException) -> str:
    """The first line of an exception's message: how a crash is named in one line."""
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"
