"""Intent judges a disagreement with the derivative: a surrogate, or a failure.

A value check (finite_difference, gradcheck, gradgradcheck, jvp, func) failing on an
argument is a bug unless intent says backward is not meant to be the derivative there
(gradverify.inference.reading.intent: the spec, [tool.gradverify] surrogates, the words around the
Function, then forward's construction, argument by argument). A spec that writes
`gradient:` has said it, and its verdicts stand; so do those of a config pattern or of
zero-config's reading of the words, which arrive here as that same key. Otherwise, with
evidence, the failure becomes a pass that names it; without, it stays a failure and gains
the one line that would declare intent. Checks that judge backward's structure (shapes,
dtypes, linearity, layouts) are never re-judged: a surrogate must still get those right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gradverify.engine.judging import JudgedCase
from gradverify.inference.reading.intent import constructed, declaration, said
from gradverify.inputs import differentiable_indices
from gradverify.results import Result, Status

# The checks that compare backward's values with the derivative (first or second order).
VALUE_CHECKS = frozenset({"finite_difference", "gradcheck", "gradgradcheck", "jvp", "func"})
_DECLARED = "gradient: surrogate"  # in a hint that already offers the declaration


class Intent:
    """Judges the value checks' failures of one case against the intent its code states."""

    def __init__(self, case: JudgedCase) -> None:
        self.context = case.context
        self._said: str | bool | None = False  # False: not read yet
        self._built: dict[int, str | None] = {}

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, each value failure on an argument that intent makes a surrogate turned
        into a pass naming the evidence, the others with the line that declares intent."""
        return [self._judged(result) for result in results]

    def _judged(self, result: Result) -> Result:
        if (
            result.status is not Status.FAIL
            or result.check not in VALUE_CHECKS
            or result.internal
            or result.usage
            or "gradient" in self.context.spec.model_fields_set  # the spec has said it
        ):
            return result
        evidence = self._words() or self._construction(result)
        if evidence is None:
            if _DECLARED in (result.hint or "") or any(_DECLARED in n for n in result.notes):
                return result
            return replace(result, notes=(*result.notes, declaration(self.context.target.spec)))
        name = result.input_name or (
            f"argument {result.input_index}" if result.input_index is not None else "its inputs"
        )
        message = f"a surrogate gradient of {name}, checked as `gradient: surrogate`: {evidence}"
        return replace(
            result,
            status=Status.PASS,
            message=message,
            hint=None,
            notes=(*result.notes, f"backward against the derivative: {result.message}"),
            mismatch_map=None,
            surrogate=evidence,
        )

    def _words(self) -> str | None:
        if self._said is False:
            try:
                self._said = said(self.context.target)
            except Exception:  # unreadable code says nothing
                self._said = None
        return self._said if isinstance(self._said, str) else None

    def _construction(self, result: Result) -> str | None:
        indices = (
            [result.input_index]
            if result.input_index is not None
            else differentiable_indices(self.context.arguments)
        )
        found = [self._built_for(index) for index in indices]
        if not found or any(evidence is None for evidence in found):
            return None
        return "; ".join(dict.fromkeys(e for e in found if e))

    def _built_for(self, index: int) -> str | None:
        if index not in self._built:
            try:
                self._built[index] = constructed(self.context.target, self.context.arguments, index)
            except Exception:  # the user's forward failing here is no evidence
                self._built[index] = None
        return self._built[index]
