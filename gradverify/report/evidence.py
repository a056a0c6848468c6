"""What a result says, as (label, value) lines: shared by every renderer that explains."""

from __future__ import annotations

from collections.abc import Iterator

from gradverify.results import Result
from gradverify.target.paths import user_path


def explanation(result: Result) -> list[str]:
    """The message, the evidence and the details of a result, as plain lines."""
    lines = [result.message, *(f"{label}: {value}" for label, value in evidence(result))]
    return lines + list(result.details)


def evidence(result: Result) -> Iterator[tuple[str, str]]:
    """(label, value) pairs that say where and how a result went wrong."""
    if result.input_index is not None:
        yield "argument", argument(result)
    if result.output_index is not None:
        yield "output", str(result.output_index)
    if result.element:  # a 0-d argument's index, [], says nothing
        yield "element", str(list(result.element))
    analytical, numerical = result.value_labels or ("analytical", "numerical")
    if result.analytical is not None:
        yield analytical, f"{result.analytical:.8g}"
    if result.numerical is not None:
        yield numerical, f"{result.numerical:.8g}"
    if result.max_abs_error is not None:
        errors = f"max abs {result.max_abs_error:.3g}"
        if result.max_rel_error is not None:
            errors += f", max rel {result.max_rel_error:.3g}"
        if result.mismatched and (result.total or result.mismatched_at_least):
            errors += f"; {_entries_off(result)}"
        yield "error", errors
    if result.hint:
        yield "likely cause", result.hint
    if result.rule is not None:
        yield "rule", result.rule
    if result.source_file is not None:
        yield "source", _place(relative_path(result.source_file), result.source_line)
    if result.spec_file is not None:
        yield "spec", _place(relative_path(result.spec_file), result.spec_line)
    for note in result.notes:
        yield "note", note


def _entries_off(result: Result) -> str:
    """`3 of 64 entries off`; `at least 3 ...` where localization found only some."""
    least = "at least " if result.mismatched_at_least else ""
    of = f" of {result.total}" if result.total else ""
    entries = "entry" if result.mismatched == 1 and not of else "entries"
    return f"{least}{result.mismatched}{of} {entries} off"


def argument(result: Result) -> str:
    """`1 (beta)`: the position among forward's arguments, and the name when known."""
    name = f" ({result.input_name})" if result.input_name else ""
    return f"{result.input_index}{name}"


def relative_path(path: str) -> str:
    """`path` as the user can open or find it (see `gradverify.target.paths.user_path`)."""
    return user_path(path)


def _place(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file
