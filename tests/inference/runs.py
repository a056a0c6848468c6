"""Zero-config in this process, as `gradverify check` runs a Function no spec names: what
inference guesses of a Function of tests/functions/, the report of its inferred cases, and
what failed in it."""

from __future__ import annotations

from gradverify.inference.choice import Choice
from gradverify.inference.from_signature import Inference, infer
from gradverify.inference.zeroconfig import infer_entry
from gradverify.results import Report, Status
from gradverify.run import session
from gradverify.run.session import RunOptions
from gradverify.target.loading import load_target


def inferred(target: str) -> Inference:
    """What inference guesses of `target` (`module:Attr`)."""
    return infer(load_target(target))


def chosen(target: str) -> dict[str, Choice]:
    """Inference's choice for each of `target`'s parameters, by name."""
    return {choice.name: choice for choice in inferred(target).choices}


def zero_config(target: str, seed: int | None = None, explore: int | None = None) -> Report:
    """`gradverify check target` with no spec, in this process, uncached."""
    entry, note = infer_entry(load_target(target))
    options = RunOptions(isolation=False, cache=False, seed=seed, explore=explore)
    return session.run([entry], options, [note])


def failed_checks(report: Report) -> set[str]:
    return {result.check for result in report.results if result.status is Status.FAIL}


def failed_cases(report: Report) -> set[str]:
    return {result.case for result in report.results if result.status is Status.FAIL}
