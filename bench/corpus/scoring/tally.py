"""Each Function's outcome in a run, judged against its truth, and the totals of a part.

- A catch: a failing first-order check (anything but gradgradcheck) on a buggy Function, on
  the argument the bug is in. Second-order catches (a failing gradgradcheck on a Function whose
  first derivative is right) are counted apart.
- A false alarm: any failing result on a correct Function or a surrogate.
- Unchecked: no result that ran, with the reason the run gave.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from scoring.manifest import Function
from scoring.modes import Run

SECOND_ORDER = "gradgradcheck"


@dataclass(frozen=True)
class Outcome:
    """What one mode made of one Function."""

    target: str
    truth: str
    verdict: str  # caught | caught2 | elsewhere | missed | clean | false_alarm | unchecked
    failed: int = 0  # failing results
    warnings: int = 0
    checks: tuple[str, ...] = ()  # the failing checks, sorted
    reason: str = ""  # why it is unchecked, or where a misplaced failure was
    kind: str = ""  # the bug's kind or the surrogate's, for failure classes
    order: int = 0  # the bug's order: 1 the first derivative is wrong, 2 only the second
    catching: tuple[str, ...] = ()  # the checks that caught the bug on its argument, sorted
    domain: str = ""


def _result_key(target: str) -> str:
    """A result's target as the manifest keys it: `ns::op` for a custom op however it is spelt
    (`ns::op`, `op:ns::op`, `module:ns::op`), else module:Attr."""
    if "::" not in target:
        return target
    namespace, _, name = target.rpartition("::")
    return f"{namespace.rsplit(':', 1)[-1]}::{name}"


def _index(results: list[dict]) -> dict[str, list[dict]]:
    by_key: dict[str, list[dict]] = {}
    for result in results:
        by_key.setdefault(_result_key(str(result.get("target", ""))), []).append(result)
    return by_key


def _coverage_reasons(run: Run) -> dict[str, str]:
    reasons = dict(run.not_reached)
    for item in (run.coverage or {}).get("without_inputs", []):
        reasons.setdefault(_result_key(item["target"]), item.get("reason", ""))
    return reasons


def outcome(function: Function, results: list[dict], reason: str) -> Outcome:
    """One Function's outcome from its results in a run."""
    entry = function.entry
    ran = [r for r in results if not r.get("usage")]
    kind = entry.bug.kind if entry.bug else (entry.surrogate.kind if entry.surrogate else "")
    order = entry.bug.order if entry.bug else 0
    base = {
        "target": function.target,
        "truth": entry.truth,
        "kind": kind,
        "order": order,
        "domain": entry.domain,
    }
    if not ran or all(r.get("status") == "skip" for r in ran):
        said = reason or next((r.get("message", "") for r in results), "") or "no result"
        return Outcome(verdict="unchecked", reason=said.splitlines()[0][:200], **base)
    failures = [r for r in ran if r.get("status") == "fail"]
    counts = {
        "failed": len(failures),
        "warnings": sum(r.get("status") == "warn" for r in ran),
        "checks": tuple(sorted({str(r.get("check")) for r in failures})),
    }
    if entry.truth in ("correct", "surrogate"):
        return Outcome(verdict="false_alarm" if failures else "clean", **counts, **base)
    if entry.truth != "buggy" or entry.bug is None:
        return Outcome(verdict="unjudged", **counts, **base)
    if not failures:
        return Outcome(verdict="missed", **counts, **base)
    bug = entry.bug
    if bug.order == 2:
        second = [r for r in failures if r.get("check") == SECOND_ORDER]
        catching = [r for r in second if r.get("input_index") in (bug.argument, None)]
    else:
        first = [r for r in failures if r.get("check") != SECOND_ORDER]
        catching = [r for r in first if r.get("input_index") == bug.argument]
    if catching:
        checks = tuple(sorted({str(r.get("check")) for r in catching}))
        verdict = "caught2" if bug.order == 2 else "caught"
        return Outcome(verdict=verdict, catching=checks, **counts, **base)
    where = sorted({f"{r.get('check')}@{r.get('input_index')}" for r in failures})
    return Outcome(verdict="elsewhere", reason=", ".join(where), **counts, **base)


def outcomes(run: Run, functions: list[Function]) -> list[Outcome]:
    """Every Function's outcome in `run`, in the manifest's order."""
    by_key = _index(run.results)
    reasons = _coverage_reasons(run)
    found = []
    for function in functions:
        results = by_key.get(function.key, [])
        if not results and run.results == [] and not reasons:
            reason = "the run gave no report"
        else:
            reason = reasons.get(function.key, "" if results else "not found by the run")
        found.append(outcome(function, results, reason))
    return found


@dataclass(frozen=True)
class Totals:
    """A part's score in one mode."""

    functions: int
    buggy_first: int
    caught: int
    buggy_second: int
    caught_second: int
    elsewhere: int
    missed: int
    sound: int  # correct Functions and surrogates
    false_alarm_functions: int
    false_results: int
    unchecked: int
    unchecked_reasons: dict[str, int] = field(default_factory=dict)
    report_lines: int = 0
    seconds: float = 0.0
    exit_code: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _reason_class(reason: str) -> str:
    """A reason without the names and numbers of one Function, so that alike reasons count
    together: `forward rejected every shape tried (RuntimeError: scatter(): Expected dtype
    int32/int64 for index)` whatever the arguments were."""
    said = re.sub(r"^cannot infer inputs for \S+: ", "", reason.strip())
    said = re.sub(r" for [\w, ]+(?= \()", "", said)
    said = re.sub(r"\d+(\.\d+)?", "N", said)
    return said[:100] or "no reason given"


def totals(run: Run, found: list[Outcome]) -> Totals:
    """The counts of a part in a run."""
    verdicts = Counter(o.verdict for o in found)
    buggy = [o for o in found if o.truth == "buggy"]
    second = sum(1 for o in buggy if o.order == 2)
    return Totals(
        functions=len(found),
        buggy_first=len(buggy) - second,
        caught=verdicts["caught"],
        buggy_second=second,
        caught_second=verdicts["caught2"],
        elsewhere=verdicts["elsewhere"],
        missed=verdicts["missed"],
        sound=sum(o.truth in ("correct", "surrogate") for o in found),
        false_alarm_functions=verdicts["false_alarm"],
        false_results=sum(o.failed for o in found if o.verdict == "false_alarm"),
        unchecked=verdicts["unchecked"],
        unchecked_reasons=dict(
            Counter(_reason_class(o.reason) for o in found if o.verdict == "unchecked")
        ),
        report_lines=run.report_lines,
        seconds=round(run.seconds, 1),
        exit_code=run.exit_code,
    )


def failure_classes(found: list[Outcome]) -> Counter[str]:
    """Functions by what went wrong with them: a false alarm by the surrogate's kind or the
    correct Function's domain, a miss by the bug's kind, an unchecked Function by its reason."""
    classes: Counter[str] = Counter()
    for o in found:
        if o.verdict == "false_alarm" and o.truth == "surrogate":
            classes[f"false alarm on a surrogate ({o.kind})"] += 1
        elif o.verdict == "false_alarm":
            classes[f"false alarm on a correct Function ({o.domain})"] += 1
        elif o.verdict in ("missed", "elsewhere"):
            classes[f"{o.verdict}: a {o.kind or 'bug'} bug"] += 1
        elif o.verdict == "unchecked":
            classes[f"unchecked: {_reason_class(o.reason)}"] += 1
    return classes
