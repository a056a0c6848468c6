"""`compile`: PLACEHOLDER — being built for issue 10; replace this whole module."""

from __future__ import annotations

from typing import ClassVar

from gradverify.checks.base import CaseContext
from gradverify.results import Result, Status


class CompileCheck:
    """PLACEHOLDER."""

    id: ClassVar[str] = "compile"
    description: ClassVar[str] = "PLACEHOLDER compile"

    def run(self, context: CaseContext) -> list[Result]:
        return [context.result(self.id, Status.SKIP, "not built yet", applies=False)]
