"""Surrogates in the reports: what a surrogate's pass covered, and one declaration for many.

A value check that disagrees with the derivative on an argument that intent makes a
surrogate passes, with `Result.surrogate` naming the evidence (gradverify.engine.intent). A
report says so once per Function and argument, not per case or check:
`surrogate: v — forward is piecewise constant in v (`v > 0`)`. A failure without such
evidence carries in its notes the line that would declare it for that Function; where many
Functions fail alike (gradverify.report.groups), one config line covers them all instead:
`surrogates = ["pkg.mod.*"]`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from gradverify.results import Result, Status

# How the note that declares one Function's intent begins
# (gradverify.inference.intent.declaration).
DECLARATION = "if backward is not meant to be the derivative here"
# The first `: ` outside backticks: the evidence before it, its consequence after.
_CLAUSE = re.compile(r"^((?:[^`:]|`[^`]*`|:(?! ))*): ")


def covered(results: Iterable[Result]) -> list[str]:
    """`v — forward is piecewise constant in v (`v > 0`)`: each argument that a surrogate's
    pass covered, with its evidence in brief, once whatever the cases and checks."""
    said: dict[str, None] = {}
    for result in results:
        if result.status is Status.PASS and result.surrogate:
            said.setdefault(_covered(result), None)
    return list(said)


def _covered(result: Result) -> str:
    assert result.surrogate is not None
    parts = (_brief(part) for part in result.surrogate.split("; "))
    evidence = "; ".join(dict.fromkeys(parts))
    if result.input_name:
        return f"{result.input_name} — {evidence}"
    if result.input_index is not None:
        return f"argument {result.input_index} — {evidence}"
    return evidence


def _brief(evidence: str) -> str:
    """The evidence without what follows from it (`: its derivative is 0 almost everywhere`)."""
    found = _CLAUSE.match(evidence)
    return found.group(1) if found else evidence


def declares(result: Result) -> bool:
    """Whether `result`'s notes give the line that declares its Function's intent."""
    return any(note.startswith(DECLARATION) for note in result.notes)


def undeclared(result: Result) -> Result:
    """`result` without that line (a line for many Functions says it instead)."""
    notes = tuple(note for note in result.notes if not note.startswith(DECLARATION))
    return replace(result, notes=notes)


def convention(targets: Sequence[str]) -> str:
    """The config line that declares a surrogate for every one of `targets` at once."""
    listed = ", ".join(f'"{pattern}"' for pattern in patterns(targets))
    return (
        "if this is the package's convention, declare it once: "
        f"surrogates = [{listed}] under [tool.gradverify]"
    )


def patterns(targets: Sequence[str]) -> list[str]:
    """`["pkg.mod.*"]`: the modules `targets` (`pkg.mod:Fn`, `path/file.py:Fn`) have in
    common, dotted as [tool.gradverify] matches them; each module's where none is shared."""
    modules = [_module(target) for target in targets]
    common: list[str] = []
    for parts in zip(*modules, strict=False):
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    if any(common):
        return [".".join(common) + ".*"]
    return [".".join(module) + ".*" for module in dict.fromkeys(tuple(m) for m in modules)]


def _module(target: str) -> list[str]:
    """`pkg.mod:Fn` -> [pkg, mod]; `path/file.py:Fn` -> [path, file]."""
    module = target.partition(":")[0]
    return module.removesuffix(".py").replace("\\", ".").replace("/", ".").split(".")
