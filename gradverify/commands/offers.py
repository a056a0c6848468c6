"""What to run instead, when `check file.py` names code that no spec checks.

A plain `file.py` is a changed file (the specs that depend on it run, as pre-commit passes
it). Typed by hand with no such spec, it would check nothing: say which Functions the file
defines and how to check them, rather than a silent green run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def offers(paths: Sequence[str]) -> list[str]:
    """A note per Python file among `paths` that defines Functions or custom ops."""
    from gradverify.spec.changed_files import is_python_file

    notes = []
    for path in paths:
        if is_python_file(path) and Path(path).is_file():
            note = _offer(path)
            if note:
                notes.append(note)
    return notes


def _offer(path: str) -> str | None:
    from gradverify.spec.definitions import definitions_in_directory
    from gradverify.spec.identity import canonical

    file = Path(path).resolve()
    directory = str(Path(path).parent)
    found = [
        d
        for d in definitions_in_directory(directory)
        if d.file.resolve() == file and d.unimportable is None  # built in a function: no init
    ]
    if not found:
        return None
    targets = [canonical(definition.target) for definition in found]  # a module where it imports
    names = [target.split(":", 1)[1] for target in targets]
    where, first = targets[0].split(":", 1)
    count = _count(
        sum(d.kind == "Function" for d in found), sum(d.kind != "Function" for d in found)
    )
    if where.endswith(".py"):  # not importable as a module from here: named by its path
        every = f"`gradverify check {targets[0]}` checks {first}"
    else:
        every = (
            f"`gradverify check {where}` checks every one on inputs inferred from its "
            f"signature (`{where}:{first}` one)"
        )
    return (
        f"{path} defines {count} that no spec checks ({', '.join(names)}): {every}; "
        f"`gradverify init {targets[0]}` writes a spec to adjust"
    )


def _count(functions: int, ops: int) -> str:
    """`2 Functions and 1 custom op`."""
    said = [
        f"{n} {word}{'s' if n != 1 else ''}"
        for n, word in ((functions, "Function"), (ops, "custom op"))
        if n
    ]
    return " and ".join(said)
