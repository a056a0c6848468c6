"""A unit of work: one case of one Function. Torch-free, so the parent process stays light."""

from __future__ import annotations

from dataclasses import dataclass

from gradverify.spec.load import SpecEntry
from gradverify.spec.models import Case


@dataclass(frozen=True)
class Task:
    """One case of one Function, as sent to a worker."""

    id: int
    entry: SpecEntry
    case: str
    seed: int

    def spec_case(self) -> Case:
        """The case of the spec this task runs (`case` is its name)."""
        return next(c for c in self.entry.spec.cases if c.name == self.case)


@dataclass(frozen=True)
class InferTask:
    """Zero-config: infer a spec for `target` from forward's signature, in a worker."""

    id: int
    target: str


@dataclass(frozen=True)
class OpTask:
    """Whether `target` loads as a custom op (which gets `compile` by default), in a worker:
    the pytest plugin's items, known without importing torch in pytest's process."""

    id: int
    target: str
