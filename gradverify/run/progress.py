"""Progress on a long run: a bar on the terminal after a second; without a terminal (CI, a
log file), a line per finished target once the run has gone on for LINES_AFTER seconds.
Nothing for a short run."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradverify.spec.load import SpecEntry

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Runs shorter than this never show a bar: it would only flicker.
DELAY = 1.0
# Without a terminal, a run shorter than this prints nothing but its report.
LINES_AFTER = 30.0
# What a task reports when it is over (the pool's last word on it; a cache hit's).
FINISHED = ("done", "ended", "user_error", "internal", "cached")

Listener = Callable[[Any, str, Any], None]


@contextmanager
def progress_listener(
    enabled: bool, total: int | None = None, lines: Sequence[SpecEntry] | None = None
) -> Iterator[Listener | None]:
    """A listener for session.run that drives a bar on stderr, shown after DELAY seconds;
    else, given the run's entries as `lines`, one that prints a line per finished target."""
    if not enabled:
        yield TargetLines(lines).listen if lines else None
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
        if kind in FINISHED:
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


class TargetLines:
    """`[3/26] ✗ mypkg.ops:Cube  20 passed, 1 failed  (41 s)` on stderr as each target's
    last case finishes, once the run has gone on for `after` seconds: a CI log shows a long
    run moving. The counts leave out checks that do not apply, as the report does."""

    def __init__(
        self,
        entries: Sequence[SpecEntry],
        stream: IO[str] | None = None,
        after: float = LINES_AFTER,
    ) -> None:
        self.stream = stream or sys.stderr
        self.after = after
        self.started = time.monotonic()
        self.left: dict[tuple[Any, ...], int] = {}  # cases not finished, per target
        for entry in entries:
            self.left[_key(entry)] = self.left.get(_key(entry), 0) + len(entry.spec.cases)
        self.counts: dict[tuple[Any, ...], Counter[str]] = {key: Counter() for key in self.left}
        self.finished = 0

    def listen(self, task: Any, kind: str, value: Any) -> None:
        key = _key(task.entry)
        if key not in self.left:
            return
        if kind in ("results", "cached"):
            self.counts[key].update(r.status.value for r in value if r.applies)
        elif kind in ("ended", "internal", "user_error"):  # its failure is made after the run
            self.counts[key]["fail"] += 1
        if kind not in FINISHED:
            return
        self.left[key] -= 1
        if self.left[key]:
            return
        self.finished += 1
        elapsed = time.monotonic() - self.started
        if elapsed >= self.after:
            self.stream.write(self.line(key, elapsed) + "\n")
            self.stream.flush()

    def line(self, key: tuple[Any, ...], elapsed: float) -> str:
        counts = self.counts[key]
        mark = "✗" if counts["fail"] else "✓"
        said = [f"{counts['pass']} passed"]
        said += [
            f"{counts[status]} {word}"
            for status, word in (("fail", "failed"), ("warn", "warning(s)"), ("skip", "skipped"))
            if counts[status]
        ]
        where = f"[{self.finished}/{len(self.left)}]"
        return f"{where} {mark} {key[2]}  {', '.join(said)}  ({elapsed:.0f} s)"


def _key(entry: Any) -> tuple[Any, ...]:
    """A spec entry, however the run copied it (overrides replace the object)."""
    return (entry.file, entry.line, entry.spec.target)
