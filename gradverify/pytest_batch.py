"""The cases of one `pytest --gradverify` run, run together as `gradverify check` runs them.

pytest asks for results one item at a time; running each case on its own (in pytest's
process) paid for every case in turn on one core. Here the first request runs every selected
case in one `gradverify.run.session.run`: the fork server imports torch once, a pool of
isolated workers (`-j`, else `[tool.gradverify] jobs`, else one per core) shares the cases,
and each later request reads its case's results. A spec or target error (which the session
raises for the whole run) is kept to the cases it concerns: those cases then run one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gradverify.results import Result
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import FunctionSpec

_Key = tuple[str, int | None, str, str]  # spec file, case line, target, case


class Batch:
    """Selected (entry, case) pairs, run in one session on the first request."""

    def __init__(self, cases: Sequence[tuple[SpecEntry, str]], root: Path, jobs: int | None):
        self.cases = list(cases)
        self.root = root
        self.jobs = jobs
        self._results: dict[_Key, list[Result]] | None = None
        self._failed = False

    def results(self, entry: SpecEntry, case: str) -> list[Result]:
        """The results of one case of the batch."""
        if self._results is None and not self._failed:
            try:
                self._results = self._run_all()
            except Exception:  # each case then meets its own error alone
                self._failed = True
        found = None if self._results is None else self._results.get(_key(entry, case))
        # A case the batch has no results for runs alone: an item never passes unchecked.
        return self._run([(entry, case)]) if found is None else found

    def _run_all(self) -> dict[_Key, list[Result]]:
        by_key: dict[_Key, list[Result]] = {}
        for result in self._run(self.cases):
            key = (result.spec_file or "", result.spec_line, result.target, result.case)
            by_key.setdefault(key, []).append(result)
        return by_key

    def _run(self, cases: Sequence[tuple[SpecEntry, str]]) -> list[Result]:
        from gradverify.run import session

        options = session.RunOptions(isolation=True, jobs=self._jobs(), cache=False)
        return list(session.run(_entries(cases), options).results)

    def _jobs(self) -> int:
        if self.jobs is not None:
            return self.jobs
        from gradverify.spec.config import load_config

        return load_config(self.root).settings.jobs or 0


def start_early(config: Any) -> None:
    """Start the fork server now, so that its torch import overlaps collection; not in an
    xdist worker, which starts its own when it runs its cases, nor in an xdist controller,
    which runs none."""
    if hasattr(config, "workerinput") or config.getoption("numprocesses", None):
        return
    from gradverify.run import session

    session.start_early(session.RunOptions(cache=False))


def needs_loading(spec: FunctionSpec) -> bool:
    """Whether a spec's checks depend on its target being a custom op."""
    return spec.checks is None and "compile" not in spec.extra_checks


def custom_ops(files: Sequence[str], config: Any) -> dict[str, bool | None]:
    """Whether each `module:Attr` target of the spec files whose checks depend on it is a
    custom op, from one worker; {} under xdist (each xdist worker would start a pool) or
    where the specs do not read (their collection says why)."""
    if hasattr(config, "workerinput"):
        return {}
    from gradverify.errors import GradverifyError
    from gradverify.run import session
    from gradverify.spec.plan import make_plan
    from gradverify.spec.targets import parse_target

    try:
        entries = make_plan(list(files)).entries
    except GradverifyError:
        return {}
    targets = [
        entry.spec.target
        for entry in entries
        if entry.spec.target is not None and needs_loading(entry.spec)
    ]
    forms = {target: parse_target(target) for target in targets}
    loaded = [t for t, form in forms.items() if form is not None and form.op is None]
    return session.custom_ops(list(dict.fromkeys(loaded)))


def _entries(cases: Sequence[tuple[SpecEntry, str]]) -> list[SpecEntry]:
    """One entry per spec entry, holding only its selected cases, in the order of `cases`."""
    chosen: dict[int, tuple[SpecEntry, list[str]]] = {}
    for entry, case in cases:
        chosen.setdefault(id(entry), (entry, []))[1].append(case)
    return [
        replace(
            entry,
            spec=entry.spec.model_copy(
                update={"cases": [c for c in entry.spec.cases if c.name in names]}
            ),
        )
        for entry, names in chosen.values()
    ]


def _key(entry: SpecEntry, case: str) -> _Key:
    return (entry.file or "", entry.case_lines.get(case, entry.line), entry.spec.target or "", case)
