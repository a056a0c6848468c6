"""A progress bar on the terminal for runs longer than a second; nothing otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Runs shorter than this never show a bar: it would only flicker.
DELAY = 1.0

Listener = Callable[[Any, str, Any], None]


@contextmanager
def progress_listener(enabled: bool, total: int | None = None) -> Iterator[Listener | None]:
    """A listener for session.run that drives a bar on stderr, shown after DELAY seconds."""
    if not enabled:
        yield None
        return
    bar = DelayedBar(total)
    try:
        yield bar.listen
    finally:
        bar.stop()


class DelayedBar:
    def __init__(self, total: int | None) -> None:
        self.started = time.monotonic()
        self.progress: Progress | None = None
        self.task_id: Any = None
        self.total = total
        self.finished = 0

    def listen(self, task: Any, kind: str, value: Any) -> None:
        if kind in ("done", "ended", "user_error", "internal"):
            self.finished += 1
        if self.progress is None and time.monotonic() - self.started < DELAY:
            return
        if self.progress is None:
            self._start()
        assert self.progress is not None
        label = f"{task.entry.spec.target} [{task.case}]"
        if kind == "check":
            label += f" · {value}"
        self.progress.update(self.task_id, completed=self.finished, description=label)

    def _start(self) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=Console(stderr=True), transient=True,
        )  # fmt: skip
        self.progress.start()
        self.task_id = self.progress.add_task("", total=self.total, completed=self.finished)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
