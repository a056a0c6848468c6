"""The judges of one case's findings, in the one ordered registry (gradverify.engine.judging
says what a judge is). Adding one is a module and a line in `CASE_JUDGES`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gradverify.engine.gauge import GaugeBases
from gradverify.engine.intent import Intent
from gradverify.engine.judging import Judge, JudgedCase
from gradverify.engine.ordered import OrderNotes
from gradverify.engine.random_forward import RandomForward
from gradverify.engine.structured import StructuredInputs
from gradverify.results import Result

JudgeFactory = Callable[[JudgedCase], Judge]


# In the order they judge, each seeing what the ones before decided: a failure one of them
# turns into a warning is no failure to the next, and the note on a broken order goes on
# whatever still fails.
CASE_JUDGES: tuple[JudgeFactory, ...] = (
    Intent,  # a disagreement with the derivative that intent explains
    RandomForward,  # a random forward whose backward is right on average
    StructuredInputs,  # a structured input perturbed off its structure
    GaugeBases,  # an output that is a basis of a subspace
    OrderNotes,  # a case that breaks an order the Function's code states
)


class CaseJudges:
    """Every registered judge, built once for one case."""

    def __init__(self, case: JudgedCase, judges: Sequence[JudgeFactory] | None = None) -> None:
        self.judges = tuple(build(case) for build in (CASE_JUDGES if judges is None else judges))

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """One check's `results` after every judge, in the registry's order."""
        judged = list(results)
        for judge in self.judges:
            judged = judge.judge(judged)
        return judged
