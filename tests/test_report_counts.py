"""Every format counts one run alike: a check that does not apply is not a skip.

One real run of a fixture set with every kind of result (pass, fail, a real skip: a CUDA
case on a machine without CUDA, checks that do not apply, a warning), rendered in every
format, and the counts read back out of each the way its consumers read them.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from gradverify.report import FORMATS, RenderOptions
from gradverify.results import Report

MIXED = Path(__file__).parent / "specs" / "report" / "mixed.yaml"
KINDS = ("passed", "failed", "skipped", "not_applicable", "warnings")


@pytest.fixture(scope="module")
def mixed(run_spec: Any) -> Report:
    return run_spec(MIXED)


def from_text(rendered: str) -> dict[str, int]:
    summary = " ".join(rendered.split("\n\n")[-1].split())
    counts = {kind: _number(summary, rf"(\d+) {word}") for kind, word in _WORDS.items()}
    # A failure that repeats another check's finding on its case is counted apart, `2 failed
    # (+1 repeats)`: the text still counts every result.
    counts["failed"] += _number(summary, r"\(\+(\d+) repeats\)")
    return counts


_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "not_applicable": "not applicable",
    "warnings": r"warning\(s\)",
}


def _number(text: str, pattern: str) -> int:
    found = re.findall(pattern, text)
    assert len(found) <= 1, (pattern, text)
    return int(found[0]) if found else 0


def from_json(rendered: str) -> dict[str, int]:
    summary = json.loads(rendered)["summary"]
    return {kind: summary[kind] for kind in KINDS}


def from_junit(rendered: str) -> dict[str, int]:
    root = ET.fromstring(rendered)
    testcases = list(root.iter("testcase"))
    assert int(root.get("tests", "")) == len(testcases)
    warnings = sum(
        1 for case in testcases if (case.findtext("system-out") or "").startswith("WARNING")
    )
    skipped = sum(1 for case in testcases if case.find("skipped") is not None)
    failed = sum(1 for case in testcases if case.find("failure") is not None)
    assert (int(root.get("skipped", "")), int(root.get("failures", ""))) == (skipped, failed)
    not_applicable = sum(
        int(prop.get("value", ""))
        for prop in root.iter("property")
        if prop.get("name") == "not_applicable"
    )
    passed = len(testcases) - failed - skipped - warnings
    return dict(zip(KINDS, (passed, failed, skipped, not_applicable, warnings), strict=True))


def from_github(rendered: str) -> dict[str, int]:
    summary = rendered.splitlines()[-1]
    assert summary.startswith("gradverify ")
    return {kind: _number(summary, rf"(\d+) {word}") for kind, word in _WORDS.items()}


def from_sarif(rendered: str) -> dict[str, int]:
    summary = json.loads(rendered)["runs"][0]["properties"]["summary"]
    return {kind: summary[kind] for kind in KINDS}


def from_html(rendered: str) -> dict[str, int]:
    (header,) = re.findall(r"<header[^>]*>.*?</header>", rendered, re.S)
    summary = re.sub(r"<[^>]+>", " ", header)
    return {kind: _number(summary, rf"(\d+) {word}") for kind, word in _WORDS.items()}


READERS = {
    "text": from_text,
    "json": from_json,
    "junit": from_junit,
    "github": from_github,
    "sarif": from_sarif,
    "html": from_html,
}


def test_every_format_has_a_reader() -> None:
    assert set(READERS) == set(FORMATS)


def test_every_format_counts_the_same(mixed: Report, in_repo: Path) -> None:
    summary = mixed.summary
    expected = {kind: getattr(summary, kind) for kind in KINDS}
    # The fixture holds every kind of result, and a check that does not apply is no skip.
    assert all(expected.values()), expected
    not_applying = [r for r in mixed.results if not r.applies]
    assert expected["not_applicable"] == len(not_applying)
    assert sum(expected.values()) == summary.results
    counted = {name: READERS[name](FORMATS[name](mixed, RenderOptions())) for name in FORMATS}
    assert counted == dict.fromkeys(FORMATS, expected)


def test_junit_has_no_testcase_for_a_check_that_does_not_apply(
    mixed: Report, in_repo: Path
) -> None:
    root = ET.fromstring(FORMATS["junit"](mixed, RenderOptions()))
    names = {case.get("name") for case in root.iter("testcase")}
    assert "cpu::jvp" not in names  # the Function defines no jvp: nothing to skip
    assert "gpu::jvp" in names  # no CUDA here: a real skip
    skipped = [case.find("skipped") for case in root.iter("testcase")]
    assert sum(s is not None for s in skipped) == mixed.summary.skipped
