"""Results as plain, frozen data. The JSON report is their plain form (a public contract)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any

REPORT_VERSION = 1
# What a wasted-work warning says (checks/wasted_work.py): a habit of backward's, the same
# in every case of a Function, so a run reports it once per Function (engine/folding.py).
WASTED_WORK_WORDS = "(wasted work)"


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    WARN = "warn"


@dataclass(frozen=True)
class Branches:
    """Which branches of backward's source one case ran, as coverage.py counts them: an arc
    (from line, to line) out of a line with more than one way on (`if`, `while`, `for`); a
    negative `to` leaves the function."""

    function: str  # "backward"
    file: str
    line: int  # where the function is defined (its `def`)
    possible: tuple[tuple[int, int], ...]
    taken: tuple[tuple[int, int], ...]
    lines: tuple[int, ...] = ()  # backward's lines the case ran, however reached

    @staticmethod
    def from_dict(plain: dict[str, Any]) -> Branches:
        arcs = ("possible", "taken")
        fields = {**plain, **{name: tuple(tuple(arc) for arc in plain[name]) for name in arcs}}
        return Branches(**{**fields, "lines": tuple(plain.get("lines", ()))})


@dataclass(frozen=True)
class Explored:
    """What exploring a case's domain did (gradverify.engine.explore): further draws judged
    by finite_difference, of how many at most, within what time."""

    draws: int  # further draws tried
    planned: int  # the most it would try (`--explore N`, or the default)
    budget_seconds: float  # the time it had
    ran_out: bool  # its time ended it before `planned` draws
    found: bool  # a draw failed: the result carrying this is that failure
    by_default: bool = True  # the default budget, not an `explore:` key or `--explore N`
    # Draws aimed first at a branch of backward the case's own draw left unrun
    # (gradverify.engine.explore.aim): the line aimed at (the first still unrun, if any),
    # how many of the draws were aimed, and whether they reached every line aimed at.
    aimed_line: int | None = None
    aimed: int = 0
    reached: bool = False


@dataclass(frozen=True)
class Result:
    """The verdict of one check on one case, optionally about one argument or output."""

    target: str
    case: str
    check: str
    status: Status
    message: str = ""
    input_index: int | None = None
    input_name: str | None = None
    output_index: int | None = None
    element: tuple[int, ...] | None = None
    analytical: float | None = None
    numerical: float | None = None
    max_abs_error: float | None = None
    seconds: float = 0.0
    # Beyond the contract's core fields: evidence for people and renderers.
    max_rel_error: float | None = None
    mismatched: int | None = None  # elements out of tolerance
    total: int | None = None  # elements compared
    hint: str | None = None  # the likely cause, in plain words
    notes: tuple[str, ...] = ()
    details: tuple[str, ...] = ()  # extra lines: a user traceback, a table of values
    spec_file: str | None = None
    spec_line: int | None = None
    rule: str | None = None  # a lint finding's stable id, e.g. "GV101"
    source_file: str | None = None  # where in the user's code, when known
    source_line: int | None = None
    cached: bool = False  # reported from the cache of an earlier passing run
    # False: the check does not apply to this Function (no jvp rule, no `reference:` key, ...);
    # counted, never shown in the default text report.
    applies: bool = True
    # The earlier check on this case whose finding this result repeats or is stopped by
    # (a crash in backward, the same non-finite output): the report says it once.
    same_as: str | None = None
    # Where the wrong entries lie in a 1-D or 2-D argument: one string per row of the
    # argument, "x" wrong, "." right, " " not examined (randomized mode).
    mismatch_map: tuple[str, ...] | None = None
    # True when `mismatched` counts only what localization found ("at least" so many).
    mismatched_at_least: bool = False
    # What `analytical` and `numerical` stand for when not backward's value and the value it
    # is compared with by default: ("first run", "second run") for two backward runs.
    value_labels: tuple[str, str] | None = None
    # True: gradverify itself failed on this case (a bug to report, with the traceback in
    # `details`), not a finding about the user's code; the run's exit code is then 3.
    internal: bool = False
    # True: bad input kept this case or target from running (a spec file that does not read,
    # a target that cannot be loaded, a case that does not fit forward), not a finding about
    # the user's code; the others run, and the run's exit code is then 2 (3 if internal).
    usage: bool = False
    # Backward's branches this case ran (one result of the case carries them), if measured.
    branches: Branches | None = None
    # What --explore tried beyond the case's own draw (one finite_difference result of the
    # case carries it), if it explored.
    explored: Explored | None = None
    # Why backward's disagreement with the derivative here is intended (gradverify.engine.intent):
    # set on the pass a surrogate gets, e.g. "forward is piecewise constant in v (`v > 0`)".
    surrogate: str | None = None

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    @property
    def not_applicable(self) -> bool:
        """A check that does not apply to this Function: counted apart, never a skip."""
        return self.status is Status.SKIP and not self.applies

    def to_dict(self) -> dict[str, Any]:
        plain = asdict(self)
        plain["status"] = self.status.value
        plain["element"] = list(self.element) if self.element is not None else None
        plain["notes"] = list(self.notes)
        plain["details"] = list(self.details)
        plain["mismatch_map"] = list(self.mismatch_map) if self.mismatch_map is not None else None
        plain["value_labels"] = list(self.value_labels) if self.value_labels is not None else None
        return plain


@dataclass(frozen=True)
class Summary:
    """How many results of each kind; passed + failed + skipped + warnings + not_applicable
    is results. A check that does not apply to a Function (`applies=False`) is not a skip."""

    targets: int
    cases: int
    results: int
    passed: int
    failed: int
    skipped: int  # real skips only: the check applies but could not run (no CUDA, ...)
    warnings: int
    not_applicable: int = 0  # checks that do not apply (no jvp rule, no `reference:` key, ...)


def finding_key(result: Result) -> tuple[object, ...] | None:
    """What a finding says, without which check said it: two results of one case with the
    same key found one thing (gradcheck confirming finite_difference, say). None when the
    result carries no analytical value, so there is nothing to compare. The values compare
    as floats: a NaN equals no other NaN (a non-finite finding is folded by what it is about,
    gradverify.engine.folding)."""
    if result.analytical is None:
        return None
    return (
        result.target,
        result.case,
        result.input_index,
        result.output_index,
        result.element,
        result.analytical,
        result.numerical,
    )


@dataclass(frozen=True)
class BranchCoverage:
    """The branches of one target's backward that its cases ran, all cases together."""

    target: str
    function: str
    file: str
    line: int
    possible: tuple[tuple[int, int], ...]
    taken: tuple[tuple[int, int], ...]
    lines: tuple[int, ...] = ()  # backward's lines any case ran
    # (line, draws): a line that stayed unrun, and the draws explore aimed at it in vain.
    aimed: tuple[tuple[int, int], ...] = ()

    @property
    def never(self) -> tuple[tuple[int, int], ...]:
        return tuple(arc for arc in self.possible if arc not in self.taken)

    @property
    def complete(self) -> bool:
        return not self.never

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "function": self.function,
            "file": self.file,
            "line": self.line,
            "branches": len(self.possible),
            "run": len(self.possible) - len(self.never),
            "never": [list(arc) for arc in self.never],
            "explored": [  # the lines explore aimed draws at in vain
                {"line": line, "draws": draws, "reached": False} for line, draws in self.aimed
            ],
        }


def branch_coverage(results: Sequence[Result]) -> list[BranchCoverage]:
    """Per target, in the order met, the union of the branches its cases ran."""
    found: dict[str, BranchCoverage] = {}
    aimed: dict[str, dict[int, int]] = {}  # target -> line -> draws aimed at it, never reaching it
    for result in results:
        explored = result.explored
        if explored is not None and explored.aimed_line is not None and not explored.reached:
            tried = aimed.setdefault(result.target, {})
            tried[explored.aimed_line] = tried.get(explored.aimed_line, 0) + explored.aimed
        branches = result.branches
        if branches is None:
            continue
        known = found.get(result.target)
        taken = set(branches.taken) | (set(known.taken) if known is not None else set())
        lines = set(branches.lines) | (set(known.lines) if known is not None else set())
        found[result.target] = BranchCoverage(
            result.target, branches.function, branches.file, branches.line,
            branches.possible, tuple(arc for arc in branches.possible if arc in taken),
            tuple(sorted(lines)),
        )  # fmt: skip
    return [
        replace(known, aimed=_still_unrun(known, aimed.get(target, {})))
        for target, known in found.items()
    ]


def _still_unrun(found: BranchCoverage, aimed: dict[int, int]) -> tuple[tuple[int, int], ...]:
    """(line, draws) of the lines explore aimed at that no case nor draw ran."""
    return tuple((line, draws) for line, draws in sorted(aimed.items()) if line not in found.lines)


@dataclass(frozen=True)
class Uncovered:
    """A Function that was not checked: no spec names it and its inputs could not be inferred."""

    target: str
    reason: str  # why inference stopped (zero-config's message)


@dataclass(frozen=True)
class Coverage:
    """Gradient coverage of a run over a package: how each Function and op found in its code
    got its inputs (`gradverify check mypkg`)."""

    with_specs: tuple[str, ...]
    inferred: tuple[str, ...]
    without_inputs: tuple[Uncovered, ...]
    ops: int = 0  # how many of them are custom ops
    require_specs: bool = False  # --require-specs: a Function no spec names fails the run

    @property
    def functions(self) -> int:
        return len(self.with_specs) + len(self.inferred) + len(self.without_inputs)

    @property
    def unspecified(self) -> tuple[str, ...]:
        """The Functions no spec names, in the order found."""
        return (*self.inferred, *(uncovered.target for uncovered in self.without_inputs))

    @property
    def failed(self) -> bool:
        return self.require_specs and bool(self.unspecified)

    def to_dict(self) -> dict[str, Any]:
        return {
            "functions": self.functions,
            "custom_ops": self.ops,
            "with_specs": list(self.with_specs),
            "inferred": list(self.inferred),
            "without_inputs": [asdict(uncovered) for uncovered in self.without_inputs],
            "require_specs": self.require_specs,
            "unspecified": list(self.unspecified),
        }


@dataclass(frozen=True)
class Report:
    """Everything one run found, in a deterministic order."""

    results: tuple[Result, ...]
    notes: tuple[str, ...] = field(default=())  # run-level remarks, e.g. "inputs inferred"
    coverage: Coverage | None = None  # a run over a package or a directory of code
    # zero-config targets: (target, the inferred cases, each {"case": name, "inputs": [...]})
    inferred: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = field(default=())
    interrupted: bool = False  # Ctrl-C: the results of the cases that finished before it

    @property
    def passed(self) -> bool:
        failed_coverage = self.coverage is not None and self.coverage.failed
        return (
            not self.interrupted
            and not failed_coverage
            and not any(result.failed for result in self.results)
        )

    @property
    def checked(self) -> bool:
        """Whether any check ran: a result that passed, failed or warned (a skip, or a check
        that does not apply, checked nothing)."""
        return any(result.status is not Status.SKIP for result in self.results)

    @property
    def internal_errors(self) -> tuple[Result, ...]:
        """The results where gradverify itself failed (exit code 3)."""
        return tuple(result for result in self.results if result.internal)

    @property
    def usage_errors(self) -> tuple[Result, ...]:
        """The results where bad input (a spec, a target) kept something from running (exit
        code 2, unless an internal error makes it 3)."""
        return tuple(result for result in self.results if result.usage)

    @property
    def summary(self) -> Summary:
        by_status = {status: 0 for status in Status}
        for result in self.results:
            by_status[result.status] += 1
        not_applicable = sum(1 for result in self.results if result.not_applicable)
        return Summary(
            targets=len({result.target for result in self.results}),
            cases=len({(result.target, result.case) for result in self.results}),
            results=len(self.results),
            passed=by_status[Status.PASS],
            failed=by_status[Status.FAIL],
            skipped=by_status[Status.SKIP] - not_applicable,
            warnings=by_status[Status.WARN],
            not_applicable=not_applicable,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "passed": self.passed,
            "summary": asdict(self.summary),
            "results": [result.to_dict() for result in self.results],
            "notes": list(self.notes),
            "coverage": self.coverage.to_dict() if self.coverage is not None else None,
            "inferred": {target: list(cases) for target, cases in self.inferred},
            "interrupted": self.interrupted,
            "branch_coverage": [found.to_dict() for found in branch_coverage(self.results)],
        }
