"""The targets of the cases one process runs (a worker, or this process with
`--no-isolation`), each imported once. Imported where cases run, not in the parent."""

from __future__ import annotations

from gradverify.errors import TargetError
from gradverify.target.loaded import Target
from gradverify.target.loading import load_target


class LoadedTargets:
    """Each target loaded at its first case; one that failed to load fails its other cases
    with the same TargetError, rather than being imported again."""

    def __init__(self) -> None:
        self._loaded: dict[str, Target] = {}
        self._unloadable: dict[str, TargetError] = {}

    def load(self, name: str) -> Target:
        """The target `name` (a spec's `target:`), loaded on the first call for it."""
        if name in self._unloadable:
            raise self._unloadable[name]
        if name not in self._loaded:
            try:
                self._loaded[name] = load_target(name)
            except TargetError as error:
                self._unloadable[name] = error
                raise
        return self._loaded[name]
