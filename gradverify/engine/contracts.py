"""A finding on inferred inputs that disappears on their structured twin is the Function's
contract, not a bug: where zero-config checked a case with a `structure:` (symmetric, SPD,
...) and its twin drawn plain, a failure of the plain twin whose structured case passes
becomes a warning that names the structure (check by check and argument by argument: a
check the structured case fails too stays a failure) (gradverify.inference.rules.structure makes the twin).
A user's own spec is never judged so: its cases say what the Function expects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gradverify.results import Result, Status
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import TensorInput


class ContractWarnings:
    """Judges a run's results: an inferred plain twin's failure where its structured case
    has none becomes a warning."""

    def __init__(self, entries: Sequence[SpecEntry]) -> None:
        self.entries = entries

    def judge(self, results: Sequence[Result]) -> list[Result]:
        """`results`, with the failures of each inferred plain twin whose structured case
        has none turned into warnings."""
        twins: dict[tuple[str, str], tuple[str, list[tuple[str, str]]]] = {}
        for entry in self.entries:
            if entry.file is None:  # zero-config: read from no file
                target = entry.spec.target or ""
                for case, (structured, named) in _twins(entry).items():
                    twins[(target, case)] = (structured, named)
        if not twins:
            return list(results)
        # per check and argument: the twin's wrong rhs gradient is the contract even where
        # the structured case fails another check (a second-order defect of its own)
        failing = {_key(r, r.case) for r in results if r.status is Status.FAIL}
        judged = []
        for result in results:
            twin = twins.get((result.target, result.case))
            if twin is None or result.status is not Status.FAIL or _key(result, twin[0]) in failing:
                judged.append(result)
                continue
            judged.append(_contract(result, *twin))
        return judged


def _key(result: Result, case: str) -> tuple[str, str, str, int | None]:
    return result.target, case, result.check, result.input_index


def _twins(entry: SpecEntry) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Each case whose inputs are another case's with some `structure:` dropped: its name ->
    (the structured case's name, [(argument name, structure)])."""
    found: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    cases = entry.spec.cases
    for structured in cases:
        for plain in cases:
            dropped = _dropped(structured.inputs, plain.inputs)
            if plain is not structured and dropped:
                found.setdefault(plain.name, (structured.name, dropped))
    return found


def _dropped(structured: Sequence[Any], plain: Sequence[Any]) -> list[tuple[str, str]]:
    """[(argument, structure)] where `plain` is `structured` without those structures; [] if
    they differ otherwise."""
    if len(structured) != len(plain):
        return []
    dropped = []
    for index, (one, other) in enumerate(zip(structured, plain, strict=True)):
        if _structure_only(one, other):
            dropped.append((f"inputs[{index}]", one.structure))
        elif one != other:
            return []
    return dropped


def _structure_only(one: Any, other: Any) -> bool:
    """`other` is the tensor input `one` with its structure dropped, and nothing else."""
    return (
        isinstance(one, TensorInput)
        and isinstance(other, TensorInput)
        and one.structure is not None
        and one.model_copy(update={"structure": None}) == other
    )


def _contract(result: Result, structured_case: str, dropped: list[tuple[str, str]]) -> Result:
    structures = sorted({structure for _, structure in dropped})
    kinds = " and ".join(structures)
    where = ", ".join(f"{argument}: `structure: {structure}`" for argument, structure in dropped)
    message = (
        f"passes on {kinds} inputs ({structured_case}); fails on non-{kinds} ones: if the "
        f"Function expects {kinds} inputs, say so in a spec ({where}). On these: {result.message}"
    )
    return replace(result, status=Status.WARN, message=message, hint=None)
