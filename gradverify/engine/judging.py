"""The one interface of the judges that re-decide a finding: a second opinion on a case.

A check's verdict is about the case as the check sees it. A judge knows something the check
does not, and may re-decide a finding with it: that intent makes backward a surrogate
(intent), that forward is random and backward right on average (random_forward), that an
input has a structure the check perturbed it off (structured), that an output is a basis of
a subspace (gauge), that the case breaks an order the code states (ordered, which notes it on
each failure). Each is built once per case from a `JudgedCase` and sees each check's results
before they are folded into the earlier ones; gradverify.engine.case_judges holds them in
their one ordered registry. Judges over a whole run's cases (a case against its structured
twin) are in gradverify.engine.run_judges. Nothing above the engine re-decides a finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gradverify.checks.shared.case import CaseContext
from gradverify.results import Result
from gradverify.spec.models import Case, FunctionSpec
from gradverify.target.loaded import Target


@dataclass(frozen=True)
class JudgedCase:
    """One case as the judges see it: the checks' context (the target, the spec, the
    arguments in their declared dtypes, the case's seed) and the spec's case (its inputs,
    with their structures and spans)."""

    context: CaseContext
    case: Case

    @property
    def target(self) -> Target:
        return self.context.target

    @property
    def spec(self) -> FunctionSpec:
        return self.context.spec

    @property
    def arguments(self) -> tuple[Any, ...]:
        return self.context.arguments

    @property
    def seed(self) -> int:
        return self.context.seed


class Judge(Protocol):
    """A second opinion on the findings of one case's checks.

    Building one costs nothing and calls no user code: a judge works only once a finding it
    may re-decide asks for it, and keeps what it worked out for the case's later checks.
    """

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results` in their order, each as it was or re-decided."""
        ...
