"""`--format sarif`: SARIF 2.1.0, the log that code-scanning dashboards import.

One run; its rules are the check ids and the lint rule ids. Only problems are results, as
scanners report: a failure is an `error`, a warning a `warning`. Passes and skips are not
alerts; the run's `properties` count every status. A result is located at the user's code
when it knows where (lint findings), else at the spec line of its case; the other place,
when there is one, is a related location.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradverify._version import __version__
from gradverify.catalogue import LINT_RULES as CATALOGUE_RULES
from gradverify.report.evidence import explanation, relative_path
from gradverify.report.options import RenderOptions
from gradverify.results import Report, Result, Status
from gradverify.spec.models import CHECK_IDS

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Status.FAIL: "error", Status.WARN: "warning"}

# One line per check id (tests keep this in step with the spec's CHECK_IDS).
CHECKS: dict[str, str] = {
    "lint": "Known pitfalls of hand-written Functions (GV101-GV106), from the source and the graph node.",
    "forward": "forward runs, returns floating outputs with no NaN/Inf, and does not modify its inputs in place.",
    "backward": "backward returns one well-formed, finite gradient per argument, deterministically, without modifying grad_output.",
    "layouts": "Non-contiguous arguments and arguments with requires_grad off give the same outputs and gradients as the declared layout.",
    "finite_difference": "backward's Jacobian matches central finite differences, per argument, in float64.",
    "gradcheck": "torch.autograd.gradcheck passes (float64, the spec's tolerances).",
    "gradgradcheck": "torch.autograd.gradgradcheck passes: second derivatives (double backward) are right.",
    "expected_gradient": "A surrogate backward returns the gradient its expected_gradient function describes.",
    "reference": "Outputs and gradients match a plain-PyTorch reference implementation.",
    "jvp": "The Function's jvp (forward-mode AD) matches central differences along random tangents.",
    "vmap": "torch.vmap over a batch gives the outputs and gradients of a loop over the same inputs.",
    "func": "torch.func.grad, vjp, jacrev and jacfwd over the Function agree with central finite differences.",
    "opcheck": "torch.library.opcheck's tests pass for a custom op (schema, autograd registration, fake tensor, AOT dispatch).",
    "compile": "Under torch.compile (aot_eager, fullgraph) outputs and gradients match eager, without graph breaks.",
}
# Lint rule id -> title, from the catalogue.
LINT_RULES: dict[str, str] = {rule: title for rule, (title, _) in CATALOGUE_RULES.items()}


def render(report: Report, options: RenderOptions | None = None) -> str:
    problems = [result for result in report.results if result.status in LEVELS]
    rules = _rules(problems)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    summary = report.summary
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gradverify",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                # gradverify's own failure on a case (an internal error) is a failed run
                "invocations": [{"executionSuccessful": not report.internal_errors}],
                "results": [
                    _result(result, index, fingerprint)
                    for result, fingerprint in zip(problems, _fingerprints(problems), strict=True)
                ],
                "properties": {
                    "passed": report.passed,
                    "summary": {
                        "targets": summary.targets,
                        "cases": summary.cases,
                        "results": summary.results,
                        "passed": summary.passed,
                        "failed": summary.failed,
                        "skipped": summary.skipped,
                        "warnings": summary.warnings,
                        "not_applicable": summary.not_applicable,
                    },
                    "notes": list(report.notes),
                },
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def rule_id(result: Result) -> str:
    """A lint finding's own rule id (GV104), else the check id."""
    return result.rule or result.check


def _rules(problems: list[Result]) -> list[dict[str, Any]]:
    known: list[tuple[str, str]] = [
        (check, CHECKS.get(check, f"gradverify check {check}")) for check in CHECK_IDS
    ]
    known += list(LINT_RULES.items())
    seen = {rule for rule, _ in known}
    for result in problems:  # an id this version has no line for still gets a rule
        if rule_id(result) not in seen:
            seen.add(rule_id(result))
            known.append((rule_id(result), f"gradverify check {rule_id(result)}"))
    return [_rule(rule, description) for rule, description in known]


def _rule(rule: str, description: str) -> dict[str, Any]:
    lint = rule in LINT_RULES
    return {
        "id": rule,
        "name": f"lint/{rule}" if lint else rule,
        "shortDescription": {"text": description},
        "help": {"text": f"`gradverify explain {rule}` says what it verifies and how to fix it."},
        "defaultConfiguration": {"level": "warning" if lint else "error"},
        "properties": {"tags": ["autograd", "gradverify"]},
    }


def _result(result: Result, index: dict[str, int], fingerprint: str) -> dict[str, Any]:
    places = [(result.source_file, result.source_line), (result.spec_file, result.spec_line)]
    locations = [_location(file, line) for file, line in places if file is not None]
    sarif: dict[str, Any] = {
        "ruleId": rule_id(result),
        "ruleIndex": index[rule_id(result)],
        "level": LEVELS[result.status],
        "message": {"text": "\n".join(explanation(result))},
        "locations": locations[:1],
        "partialFingerprints": {"gradverifyResult/v1": fingerprint},
        "properties": _finite(
            {
                "target": result.target,
                "case": result.case,
                "check": result.check,
                "inputIndex": result.input_index,
                "inputName": result.input_name,
                "outputIndex": result.output_index,
                "element": list(result.element) if result.element is not None else None,
                "analytical": result.analytical,
                "numerical": result.numerical,
                "valueLabels": list(result.value_labels) if result.value_labels else None,
                "maxAbsError": result.max_abs_error,
                "hint": result.hint,
            }
        ),
    }
    if len(locations) > 1:
        related = locations[1]
        related["id"] = 1
        related["message"] = {"text": f"case {result.case} of {result.target}"}
        sarif["relatedLocations"] = [related]
    return sarif


def _location(file: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(file)}}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _uri(file: str) -> str:
    """Relative to the current directory (the repository root in CI), else a file: URI."""
    path = relative_path(file)
    if Path(path).is_absolute():
        return Path(path).as_uri()
    return quote(path, safe="/")


def _fingerprints(problems: list[Result]) -> list[str]:
    """Stable across runs and across edits that move lines; distinct for two findings of
    one rule in one case (numbered in report order, which is deterministic)."""
    seen: Counter[str] = Counter()
    fingerprints = []
    for result in problems:
        where = (result.input_index, result.output_index)
        identity = repr((result.target, result.case, result.check, result.rule, *where))
        seen[identity] += 1
        fingerprint = hashlib.sha256(f"{identity}#{seen[identity]}".encode()).hexdigest()
        fingerprints.append(fingerprint[:32])
    return fingerprints


def _finite(properties: dict[str, Any]) -> dict[str, Any]:
    """Leave out what does not apply; JSON has no NaN or Infinity, so write those as text."""
    plain: dict[str, Any] = {}
    for name, value in properties.items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        plain[name] = value
    return plain
