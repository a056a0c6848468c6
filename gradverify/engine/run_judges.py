"""The judges of a whole run's findings, in their one ordered registry: those that need
several cases' results at once (a case against its structured twin), where a case's own
judges (gradverify.engine.case_judges) see one case. run/session calls `judge_run` once on
the run's results and re-decides nothing itself. Torch-free: the session runs it in the
parent process, which never imports torch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from gradverify.engine.contracts import ContractWarnings
from gradverify.results import Result
from gradverify.spec.load import SpecEntry


class RunJudge(Protocol):
    """A second opinion on the findings of a run's cases, built once per run from its spec
    entries (building one costs nothing)."""

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results` in their order, each as it was or re-decided."""
        ...


RunJudgeFactory = Callable[[Sequence[SpecEntry]], RunJudge]

RUN_JUDGES: tuple[RunJudgeFactory, ...] = (
    ContractWarnings,  # an inferred plain case whose structured twin passes
)


def judge_run(
    entries: Sequence[SpecEntry],
    results: Sequence[Result],
    judges: Sequence[RunJudgeFactory] | None = None,
) -> list[Result]:
    """The run's `results` after every run judge, in the registry's order."""
    judged = list(results)
    for build in RUN_JUDGES if judges is None else judges:
        judged = build(entries).judge(judged)
    return judged
