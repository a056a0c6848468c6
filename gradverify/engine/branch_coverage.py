"""Which branches of backward a case ran, measured by coverage.py's branch coverage.

The checks of a case that run backward on its own inputs in its ways are measured (`backward`
on the case as it is, `layouts` with each input in turn not requiring grad, so that both sides
of `if ctx.needs_input_grad[i]` count; else the first of gradcheck and finite_difference),
with coverage.py restricted to the file that defines backward, and the arcs kept are those
out of backward's own lines with more than one way on. Each measured check's first result
carries what it ran; a target's coverage is the union over its results. Nothing is measured, and nothing said, where backward has no
Python source (a C++ op), where coverage.py is missing, where another tracer that is not
coverage.py runs (a debugger), or where backward ran on another thread (autograd's device
threads), so that no line of it was seen.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from typing import Any

from gradverify.results import Branches, Result
from gradverify.target.loaded import Target

# The checks measured where the case runs them; else the first of FALLBACK it runs.
MEASURED = frozenset({"backward", "layouts"})
FALLBACK = ("gradcheck", "finite_difference")
FUNCTION = "backward"

Arc = tuple[int, int]
_MEASUREMENTS: dict[str, Any] = {}  # file -> its coverage.Coverage, made once per process
_CONTEXTS = itertools.count()
# coverage.py's warnings about its own measurement, none of them the user's business here.
_QUIET = (
    "no-data-collected", "module-not-imported", "module-not-measured", "trace-changed",
    "include-ignored", "no-ctracer", "couldnt-parse",
)  # fmt: skip


def measured_checks(checks: Sequence[str]) -> frozenset[str]:
    """The checks of `checks` whose runs are measured."""
    chosen = MEASURED.intersection(checks)
    fallback = next((check for check in FALLBACK if check in checks), None)
    return frozenset(chosen or ([fallback] if fallback is not None else []))


@contextmanager
def measuring(target: Target) -> Iterator[Callable[[], Branches | None]]:
    """Measure what runs inside; the callable yielded gives backward's branches after."""
    possible = _possible_of(target)
    started = _started(possible[0]) if possible is not None else None
    taken: list[Branches | None] = [None]
    try:
        yield lambda: taken[0]
    finally:
        if started is not None and possible is not None:
            measurement, context = started
            measurement.stop()
            file, line, start, end, arcs = possible
            data = measurement.get_data()
            data.set_query_context(context)  # this measurement's arcs alone
            executed = data.arcs(file) or []
            ran = {arc for arc in executed if start <= abs(arc[0]) <= end}
            if ran:  # backward ran on this thread, and was seen
                lines = {end_ for arc in ran for end_ in arc if start <= end_ <= end}
                kept = tuple(arc for arc in arcs if arc in ran)
                taken[0] = Branches(FUNCTION, file, line, arcs, kept, tuple(sorted(lines)))


def with_branches(results: list[Result], branches: Branches | None) -> list[Result]:
    """`results` with the first of them carrying `branches`."""
    if branches is None or not results:
        return results
    return [replace(results[0], branches=branches), *results[1:]]


def merged(known: Branches | None, more: Branches | None) -> Branches | None:
    """What two measurements of one backward ran, together."""
    if known is None or more is None:
        return more if known is None else known
    return with_taken(replace(known, lines=tuple(sorted({*known.lines, *more.lines}))), more.taken)


def with_taken(branches: Branches | None, arcs: Sequence[Arc]) -> Branches | None:
    """`branches` with `arcs` run too (a draw of explore ran them)."""
    if branches is None:
        return None
    taken = {*branches.taken, *arcs}
    lines = {*branches.lines, *(end for arc in arcs for end in arc if end > 0)}
    kept = tuple(arc for arc in branches.possible if arc in taken)
    return replace(branches, taken=kept, lines=tuple(sorted(lines)))


def _possible_of(target: Target) -> tuple[str, int, int, int, tuple[Arc, ...]] | None:
    """(file, def line, first line, last line, branch arcs) of the target's backward."""
    if not (target.is_function or target.op_name is not None):
        return None  # a plain function: no backward of its own
    if target.source_file is None or target.backward_line is None:
        return None
    return _branch_arcs(target.source_file, target.backward_line)


@lru_cache(maxsize=64)
def _branch_arcs(file: str, line: int) -> tuple[str, int, int, int, tuple[Arc, ...]] | None:
    try:
        from coverage.parser import PythonParser

        source, tree = source_tree(file)
        span = _function_span(tree, line)
        if span is None:
            return None
        parser = PythonParser(text=source, filename=file)
        parser.parse_source()
        arcs: set[Arc] = parser.arcs()
        exits: dict[int, int] = parser.exit_counts()
    except Exception:  # no coverage.py, no file, a parse coverage.py refuses: not measured
        return None
    start, def_line, end = span
    statements = _branching_lines(tree)
    branching = {
        arc
        for arc in arcs
        if start <= arc[0] <= end and exits.get(arc[0], 0) > 1 and arc[0] in statements
    }
    if not branching:
        return None  # no branch to report
    return file, def_line, start, end, tuple(sorted(branching))


# The statements that choose a way on. coverage.py 7.2 (the bottom of the declared range)
# also counts a decorated `def`, a comprehension and a lambda as having several ways on;
# those are not branches.
_BRANCHING = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Match)


def _branching_lines(tree: ast.Module) -> frozenset[int]:
    """The lines on which an if, for, while or match statement starts."""
    return frozenset(node.lineno for node in ast.walk(tree) if isinstance(node, _BRANCHING))


@lru_cache(maxsize=64)
def source_tree(file: str) -> tuple[str, ast.Module]:
    """The text of `file` and its syntax tree (never to be changed), read once per process
    for every reader of a backward's file (its arcs here, its tests in explore.aim); an
    error reading or parsing it is raised, each time."""
    with open(file, encoding="utf-8") as handle:
        source = handle.read()
    return source, ast.parse(source)


def _function_span(tree: ast.Module, line: int) -> tuple[int, int, int] | None:
    """(first line with decorators, `def` line, last line) of the function defined at `line`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if line in (first, node.lineno) and node.end_lineno is not None:
                return first, node.lineno, node.end_lineno
    return None


def _started(file: str) -> tuple[Any, str] | None:
    """A coverage.py measurement of `file`, started in a context of its own; None where it
    cannot be. One measurement per file and process serves every case: making one costs some
    15 ms (coverage.py reads the stack and the install's paths), starting one again 0.1 ms."""
    try:
        import coverage
    except ImportError:
        return None
    if sys.gettrace() is not None and coverage.Coverage.current() is None:
        return None  # a debugger's or a profiler's tracer: left alone
    measurement = _MEASUREMENTS.get(file)
    if measurement is None:
        measurement = coverage.Coverage(
            data_file=None, branch=True, include=[file], config_file=False
        )
        measurement.set_option("run:disable_warnings", list(_QUIET))
        _MEASUREMENTS[file] = measurement
    context = f"gradverify-{next(_CONTEXTS)}"
    try:
        measurement.start()
        measurement.switch_context(context)
    except Exception:
        return None
    return measurement, context
