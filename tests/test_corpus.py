"""The scoring corpus (bench/corpus): its manifest meets issue 27, and the scorer judges and
gates as bench/corpus/README.md says."""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
import yaml

CORPUS = Path(__file__).resolve().parent.parent / "bench" / "corpus"
sys.path.append(str(CORPUS))

from scoring import baseline, manifest, tally  # noqa: E402
from scoring.modes import Run  # noqa: E402

FUNCTIONS = manifest.load()


def test_the_corpus_is_as_large_and_varied_as_issue_27_asks() -> None:
    parts = Counter(function.part for function in FUNCTIONS)
    domains = {function.entry.domain for function in FUNCTIONS}
    truths = Counter(function.truth for function in FUNCTIONS)
    assert len(FUNCTIONS) >= 150
    assert parts["heldout"] >= 50
    assert len(domains) >= 12
    assert truths["buggy"] and truths["correct"] and truths["surrogate"]
    assert any(f.entry.bug and f.entry.bug.order == 2 for f in FUNCTIONS if f.part == "heldout")


def test_every_buggy_function_has_a_twin_and_every_surrogate_a_lookalike() -> None:
    assert manifest.problems(FUNCTIONS) == []


@pytest.mark.parametrize("module_name", sorted({f.module for f in FUNCTIONS}))
def test_every_function_and_usage_in_the_manifest_exists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for function in (f for f in FUNCTIONS if f.module == module_name):
        name = function.entry.name
        if "::" in name:
            namespace, op = name.split("::")
            assert hasattr(getattr(torch.ops, namespace), op), name
        else:
            value = module
            for attribute in name.split("."):
                value = getattr(value, attribute)
            assert hasattr(value, "apply"), f"{function.target} is no autograd Function"
        assert callable(getattr(module, function.entry.usage or "", None)), (
            f"{function.target}: usage {function.entry.usage!r} is not in its module"
        )


def test_the_manifests_own_specs_name_every_function() -> None:
    named = set()
    for path in (CORPUS / "specs").glob("*/*.yaml"):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        entries = document.get("functions", [document])
        named.update(str(entry.get("target")) for entry in entries)
    missing = [f.target for f in FUNCTIONS if f.target not in named]
    assert missing == []


def _function(truth: str, **entry: object) -> manifest.Function:
    fields = {"name": "Fn", "domain": "activations", "truth": truth, **entry}
    return manifest.Function("dev", "dev.m", manifest.Entry.model_validate(fields))


def _result(check: str, status: str, input_index: int | None = None, **extra: object) -> dict:
    return {
        "target": "dev.m:Fn",
        "case": "c",
        "check": check,
        "status": status,
        "input_index": input_index,
        **extra,
    }


BUGGY_1 = _function("buggy", twin="Twin", bug={"argument": 1, "order": 1})
BUGGY_2 = _function("buggy", twin="Twin", bug={"argument": 0, "order": 2})


@pytest.mark.parametrize(
    ("function", "results", "verdict"),
    [
        (BUGGY_1, [_result("finite_difference", "fail", 1)], "caught"),
        (BUGGY_1, [_result("finite_difference", "fail", 0)], "elsewhere"),
        (BUGGY_1, [_result("gradgradcheck", "fail", 1)], "elsewhere"),
        (BUGGY_1, [_result("finite_difference", "pass")], "missed"),
        (BUGGY_2, [_result("gradgradcheck", "fail", None)], "caught2"),
        (BUGGY_2, [_result("gradcheck", "fail", 0)], "elsewhere"),
        (_function("correct"), [_result("gradcheck", "fail", 0)], "false_alarm"),
        (_function("correct"), [_result("gradcheck", "warn", 0)], "clean"),
        (
            _function("surrogate", surrogate={"kind": "step"}),
            [_result("backward", "fail")],
            "false_alarm",
        ),
        (_function("correct"), [_result("forward", "fail", usage=True)], "unchecked"),
        (_function("correct"), [], "unchecked"),
    ],
)
def test_a_functions_verdict_follows_its_truth(
    function: manifest.Function, results: list[dict], verdict: str
) -> None:
    assert tally.outcome(function, results, "").verdict == verdict


def test_custom_op_results_find_their_manifest_entry() -> None:
    op = manifest.Function(
        "dev", "dev.ops", manifest.Entry(name="corpus_dev::scale", domain="ops", truth="correct")
    )
    for spelt in ("dev.ops:corpus_dev::scale", "op:corpus_dev::scale", "corpus_dev::scale"):
        results = [dict(_result("opcheck", "fail"), target=spelt)]
        run = Run("zero-config", "dev", results, None, 0, 0.0)
        assert [o.verdict for o in tally.outcomes(run, [op])] == ["false_alarm"], spelt


def _snapshot(caught: list[str], alarms: list[str], false_results: int) -> dict:
    found = [tally.Outcome(t, "buggy", "caught") for t in caught]
    found += [tally.Outcome(t, "correct", "false_alarm", failed=1) for t in alarms]
    totals = tally.totals(Run("zero-config", "dev", [], None, 0, 0.0), found)
    snapshot = baseline.snapshot("dev", found, totals)
    snapshot["false_results"] = false_results
    return snapshot


def test_the_gate_fails_on_a_lost_catch_and_names_it() -> None:
    before = {"modes": {"zero-config": {"dev": _snapshot(["a:A", "a:B"], [], 0)}}}
    now = {"zero-config": {"dev": _snapshot(["a:A", "a:C"], [], 0)}}
    regressions, improvements = baseline.compare(before, now)
    assert regressions == ["zero-config/dev: catches lost: a:B"]
    assert improvements == []


def test_the_gate_fails_when_one_check_stops_catching_what_another_still_does() -> None:
    def caught_by(*checks: str) -> dict:
        found = [tally.Outcome("a:A", "buggy", "caught", catching=checks)]
        totals = tally.totals(Run("zero-config", "dev", [], None, 0, 0.0), found)
        return baseline.snapshot("dev", found, totals)

    before = {"modes": {"zero-config": {"dev": caught_by("finite_difference", "gradcheck")}}}
    now = {"zero-config": {"dev": caught_by("gradcheck")}}
    regressions, _ = baseline.compare(before, now)
    assert regressions == ["zero-config/dev: catches by a check lost: a:A by finite_difference"]


def test_the_gate_fails_on_a_new_false_alarm_even_when_another_went() -> None:
    before = {"modes": {"zero-config": {"dev": _snapshot([], ["a:X"], 1)}}}
    now = {"zero-config": {"dev": _snapshot([], ["a:Y"], 1)}}
    regressions, _ = baseline.compare(before, now)
    assert regressions == ["zero-config/dev: new false alarms: a:Y"]


def test_the_gate_passes_what_is_no_worse_and_says_what_is_better() -> None:
    before = {
        "modes": {
            "zero-config": {
                "heldout": {
                    "caught": 3,
                    "caught_second": 0,
                    "false_alarm_functions": 4,
                    "false_results": 9,
                }
            }
        }
    }
    now = {
        "zero-config": {
            "heldout": {
                "caught": 4,
                "caught_second": 0,
                "false_alarm_functions": 4,
                "false_results": 7,
            }
        }
    }
    regressions, improvements = baseline.compare(before, now)
    assert regressions == []
    assert improvements == [
        "zero-config/heldout: catches rose from 3 to 4",
        "zero-config/heldout: false failing results fell from 9 to 7",
    ]


@pytest.mark.parametrize("name", ["baseline.json", "packages-baseline.json"])
def test_the_committed_baseline_keeps_held_out_functions_unnamed(name: str) -> None:
    document = baseline.read(CORPUS / name)
    assert document["modes"], f"bench/corpus/{name} holds no mode"
    for parts in document["modes"].values():
        assert parts["heldout"]
        assert not any(key.endswith("_targets") for key in parts["heldout"])
