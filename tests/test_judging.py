"""The judges that re-decide a finding (gradverify.engine.judging): one interface, built once
per case from a JudgedCase in the order of one registry (engine/case_judges.py), and the
judges of a whole run in theirs (engine/run_judges.py), which run/session only calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

import pytest

from gradverify.checks.shared.case import CaseContext
from gradverify.engine.case_judges import CASE_JUDGES, CaseJudges
from gradverify.engine.judging import JudgedCase
from gradverify.engine.run_judges import judge_run
from gradverify.inputs import build_inputs
from gradverify.results import Result, Status
from gradverify.spec.load import SpecEntry, parse_spec
from gradverify.target.loading import load_target
from tests.functions.judged import CountedSquare

SPEC = """
target: tests.functions.judged:CountedSquare
cases:
  - name: symmetric
    inputs: [{shape: [3, 3], structure: symmetric}]
  - name: plain
    inputs: [{shape: [3, 3]}]
"""


def entry(file: str | None = "judged.yaml") -> SpecEntry:
    (parsed,) = parse_spec(SPEC, "judged.yaml")
    return replace(parsed, file=file)


def judged_case(case_index: int = 0) -> JudgedCase:
    spec = entry().spec
    case = spec.cases[case_index]
    target = load_target("tests.functions.judged:CountedSquare")
    arguments = build_inputs(case, 0)
    context = CaseContext(target=target, case=case.name, arguments=arguments, spec=spec, seed=0)
    return JudgedCase(context, case)


def results(case: JudgedCase, status: Status, checks: Sequence[str]) -> list[Result]:
    return [case.context.result(check, status, "finding", input_index=0) for check in checks]


class Warns:
    """A judge (of a case or of a run) that turns every failure into a warning."""

    def __init__(self, case_or_entries: object) -> None:
        pass

    def judge(self, results: Sequence[Result]) -> list[Result]:
        return [replace(r, status=Status.WARN) if r.failed else r for r in results]


class Records:
    """A judge (of a case or of a run) that keeps the statuses it was given."""

    seen: ClassVar[list[Status]] = []

    def __init__(self, case_or_entries: object) -> None:
        Records.seen = []

    def judge(self, results: Sequence[Result]) -> list[Result]:
        Records.seen.extend(r.status for r in results)
        return list(results)


def test_building_the_judges_and_judging_passes_runs_no_user_code() -> None:
    case = judged_case()
    CountedSquare.calls = 0
    judges = CaseJudges(case)
    passed = results(case, Status.PASS, ("finite_difference", "gradcheck", "func"))

    assert judges.judge(passed) == passed
    assert CountedSquare.calls == 0
    assert len(judges.judges) == len(CASE_JUDGES)


def test_each_judge_sees_what_the_one_before_it_decided() -> None:
    case = judged_case()
    failed = results(case, Status.FAIL, ("finite_difference", "gradcheck"))

    judged = CaseJudges(case, judges=(Warns, Records)).judge(failed)

    assert Records.seen == [Status.WARN, Status.WARN]
    assert [r.status for r in judged] == [Status.WARN, Status.WARN]
    assert [r.status for r in CaseJudges(case, judges=(Records, Warns)).judge(failed)] == [
        Status.WARN,
        Status.WARN,
    ]
    assert Records.seen == [Status.FAIL, Status.FAIL]


def test_a_correct_backward_failed_off_a_symmetric_input_is_a_warning() -> None:
    """The registry's structured judge re-decides a first-order failure of the case."""
    case = judged_case()
    (judged,) = CaseJudges(case).judge(results(case, Status.FAIL, ("finite_difference",)))

    assert judged.status is Status.WARN
    assert "directions that keep x symmetric" in judged.message


@pytest.mark.parametrize("file", ["judged.yaml", None])
def test_a_run_judge_re_decides_only_an_inferred_plain_twin(file: str | None) -> None:
    """The run's registry holds the contract judge: a failure of zero-config's plain case
    whose structured twin passes is a warning; a spec's own case stays as it is."""
    symmetric, plain = judged_case(0), judged_case(1)
    found = [
        *results(symmetric, Status.PASS, ("finite_difference",)),
        *results(plain, Status.FAIL, ("finite_difference",)),
    ]

    judged = judge_run([entry(file)], found)

    if file is None:
        assert [r.status for r in judged] == [Status.PASS, Status.WARN]
        assert judged[1].message.startswith("passes on symmetric inputs (symmetric)")
    else:
        assert judged == found


def test_the_run_judges_judge_in_order() -> None:
    case = judged_case()
    failed = results(case, Status.FAIL, ("finite_difference",))

    judged = judge_run([entry()], failed, judges=(Warns, Records))

    assert Records.seen == [Status.WARN] and judged[0].status is Status.WARN
