"""Help for writing specs: a starter spec from forward's signature, the JSON Schema of the
spec format, and what each check verifies.

Importing this module never imports torch; `init` does when it loads the target.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gradverify.catalogue import LINT_RULES, SUMMARIES
from gradverify.catalogue.explanations import ALIASES, EXPLANATIONS, TOPICS
from gradverify.errors import UsageError
from gradverify.inference.from_signature import Inference, infer
from gradverify.inference.spec_text import file_name, spec_text
from gradverify.results import Report, Result, Status
from gradverify.spec.discover import DEFAULT_SPEC_DIR, SpecIndex
from gradverify.spec.identity import canonical
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import CHECK_IDS, DTYPE_NAMES, MultiSpec
from gradverify.spec.suggest import did_you_mean

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
RULE_ID = re.compile(r"GV\d{3}")
HEADER = (
    "# Starter spec written by `gradverify init {target}`: adjust the shapes and",
    "# values to what your Function is for, and add cases (edge values, other shapes,",
    "# float32) once this one passes. Every key: gradverify's docs/spec.md, or `gradverify schema`.",
)


# --- init -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Starter:
    """The starter spec `init` wrote, and what trying it showed."""

    path: Path
    text: str
    report: Report | None  # None: forward rejected every guess, nothing was run
    advice: list[str] = field(default_factory=list)
    inference: Inference | None = None

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed


def init(
    target_spec: str,
    output: Path | None = None,
    force: bool = False,
    run: Callable[[Path], Report] | None = None,
    spec_paths: Sequence[str] = (DEFAULT_SPEC_DIR,),
) -> Starter:
    """Write a starter spec for `target_spec` and try it with `run` (None: do not run it).

    The inputs are zero-config `check`'s (gradverify.inference.from_signature), and so is the file name.
    A spec in `spec_paths` that names the same target, however spelled, stops it (unless
    `force`): read from source first, then by what loading the target shows.
    """
    from gradverify.target.loading import load_target

    known = SpecIndex(spec_paths)  # read once, for both questions
    if not force:
        _refuse_duplicate(target_spec, known.naming(target_spec))
    target = load_target(target_spec)
    if not force:
        _refuse_duplicate(target_spec, known.with_identity(target.identity))
    if target.op_name is not None:  # one name for an op in every mode: `module:ns::name`
        target = replace(target, spec=canonical(target_spec))
    path = output or Path("specs") / file_name(target_spec)
    if path.exists() and not force:
        raise UsageError(
            f"{str(path)!r} exists; choose another --output, or --force to overwrite it"
        )
    inference = infer(target)
    text = starter_text(inference)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if inference.stopped is not None:
        advice = [
            f"{inference.stopped}: give the shapes (and dtypes, ranges) forward expects in "
            f"{path}, then run `gradverify check {path}`"
        ]
        return Starter(path, text, None, advice, inference)
    report = run(path) if run is not None else None
    return Starter(path, text, report, _advice(report, path, inference), inference)


def _refuse_duplicate(target_spec: str, existing: list[SpecEntry]) -> None:
    """A UsageError pointing at the spec that already names the target, if there is one."""
    if not existing:
        return
    entry = existing[0]
    where = f"{entry.file}:{entry.line}" if entry.line else str(entry.file)
    raise UsageError(
        f"{where} already has a spec for {canonical(target_spec)} (`target: "
        f"{entry.spec.target}`): check it with `gradverify check {entry.file}`, or pass "
        "--force to write another spec anyway"
    )


def starter_text(inference: Inference) -> str:
    """The starter spec's YAML, one commented line per input saying what was chosen and why."""
    header = [line.format(target=inference.target) for line in HEADER]
    return spec_text(inference, "basic", header)


def _advice(report: Report | None, path: Path, inference: Inference) -> list[str]:
    if report is None:
        return [f"run it with `gradverify check {path}`"]
    failed = [result for result in report.results if result.status is Status.FAIL]
    if not failed:
        warnings = report.summary.warnings
        passes = f"passes with {warnings} warning(s), shown above" if warnings else "passes"
        return [
            f"{path} {passes}. Now make it yours: shapes and value ranges your Function is "
            "used with, a case at each edge (zeros, kinks with `kinks:`), and a float32 case.",
        ]
    advice = []
    checks = sorted({result.check for result in failed}, key=CHECK_IDS.index)
    crashed = [c for c in checks if c in ("forward", "backward", "layouts")]
    if crashed:
        names = ", ".join(c.name for c in inference.choices if c.kind != "literal")
        advice.append(
            f"{', '.join(crashed)} failed: if forward or backward needs other shapes or "
            f"values, adjust {names or 'the inputs'} in {path}; otherwise the report above "
            "names the bug."
        )
    numerical = [c for c in checks if c not in crashed]
    unexplained = _unexplained(failed)
    diagnosed = [c for c in numerical if c not in unexplained]
    if diagnosed:
        # The hint is the diagnosis: a spec key that would only hide the bug it names is no
        # advice. A hint says itself when the pattern may be on purpose (a surrogate).
        intended = any("on purpose" in (r.hint or "") for r in failed if r.check in diagnosed)
        advice.append(
            f"{', '.join(diagnosed)} failed, and the report above names the likely cause: "
            "fix backward where it points"
            + ("; if what it names is on purpose, declare it as it says." if intended else ".")
        )
    undiagnosed = [c for c in numerical if c in unexplained]
    if undiagnosed:
        advice.append(
            f"{', '.join(undiagnosed)} failed with no diagnosed cause: likely backward is "
            "wrong at the element the report names. Change the spec instead only if that "
            "element is a point where the Function is not differentiable (`kinks:`), backward "
            "is on purpose not the derivative (`gradient: surrogate`), or the error is float "
            "rounding (a looser `tolerance`)."
        )
    advice.append(
        "For what a check verifies and how to fix it: "
        + ", ".join(f"`gradverify explain {check}`" for check in checks)
    )
    return advice


def _unexplained(failed: list[Result]) -> set[str]:
    """The checks with a failure that no hint explains, its own or the finding it repeats."""
    hinted = {(r.target, r.case, r.check) for r in failed if r.hint}
    return {
        r.check
        for r in failed
        if not r.hint and (r.same_as is None or (r.target, r.case, r.same_as) not in hinted)
    }


# --- schema -----------------------------------------------------------------------------


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file: one Function, or several under `functions:`."""
    schema = MultiSpec.model_json_schema()
    definitions: dict[str, Any] = schema.pop("$defs")
    definitions["MultiSpec"] = schema
    _refine(definitions)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "gradverify spec",
        "description": "A gradverify spec: one Function (`target`, `cases`, ...) or several "
        "under `functions:`.",
        "anyOf": [{"$ref": "#/$defs/FunctionSpec"}, {"$ref": "#/$defs/MultiSpec"}],
        "$defs": definitions,
    }


def _refine(definitions: dict[str, Any]) -> None:
    """What the models' validators check in code, said in JSON Schema for editors."""
    tensor = definitions["TensorInput"]
    # Exactly one of `shape` and `values` (a key set to null does not count).
    tensor["oneOf"] = [
        {"required": ["shape"], "properties": {"shape": {"type": "array"}}},
        {"required": ["values"], "properties": {"values": {"not": {"type": "null"}}}},
    ]
    names = sorted(DTYPE_NAMES)
    tensor["properties"]["dtype"]["enum"] = [*names, *(f"torch.{name}" for name in names)]
    tensor["properties"]["device"]["pattern"] = r"^(cpu|cuda|mps|xpu|meta)(:.*)?$"
    inputs = definitions["Case"]["properties"]["inputs"]["items"]
    # The "plain" branch of an input is anything but a mapping: a mapping is a tensor,
    # or a literal when written `{value: ...}`.
    inputs["oneOf"] = [item if item else {"not": {"type": "object"}} for item in inputs["oneOf"]]
    function = definitions["FunctionSpec"]["properties"]
    for key in ("target", "reference", "expected_gradient"):
        for branch in function[key]["anyOf"]:
            if branch.get("type") == "string":
                branch["pattern"] = r"^[^:].*:.*[^:]$"


# --- checks and explain -----------------------------------------------------------------


def check_list() -> list[tuple[str, str]]:
    """Every check id with its one-line description, in the order checks run."""
    return [(check, SUMMARIES[check]) for check in CHECK_IDS]


def explain(name: str | None = None) -> str:
    """What a check, a topic (`surrogate`, `kinks`, ...) or a lint rule such as GV103 is,
    and how to fix what it finds; with no name, the index of everything it can explain.

    Torch is imported only for the lint rules (`lint` and the GV ids), whose registry lives
    in the lint check.
    """
    if name is None:
        return _explain_index()
    # `finite-difference`, `Kinks`: the spelling of a flag or a heading finds the name too.
    spelled = name.strip().lower().replace("-", "_")
    key = ALIASES.get(spelled, spelled)
    if key in EXPLANATIONS:
        text = f"{key}: {SUMMARIES[key]}\n\n{EXPLANATIONS[key]}"
        return f"{text}\n\n{_rule_list()}" if key == "lint" else text
    if key in TOPICS:
        topic_summary, text = TOPICS[key]
        return f"{key}: {topic_summary}\n\n{text}"
    if RULE_ID.fullmatch(key.upper()):
        rule = LINT_RULES.get(key.upper())
        if rule is not None:
            title, remedy = rule
            return f"{key.upper()} (check lint): {title}\n\nFix: {remedy}."
        raise UsageError(f"no lint rule {name!r}; the rules are {', '.join(LINT_RULES)}")
    names = [*CHECK_IDS, *TOPICS, *ALIASES]
    raise UsageError(
        f"no check or topic {name!r}{did_you_mean(spelled, names)}; the topics are "
        f"{', '.join(TOPICS)}, and `gradverify explain` lists everything it explains"
    )


def _explain_index() -> str:
    width = max(len(name) for name in [*CHECK_IDS, *TOPICS])
    checks = [f"  {check.ljust(width)}  {SUMMARIES[check]}" for check in CHECK_IDS]
    topics = [f"  {name.ljust(width)}  {TOPICS[name][0]}" for name in TOPICS]
    return "\n".join(
        [
            "gradverify explain NAME, where NAME is",
            "a check:",
            *checks,
            "a topic:",
            *topics,
            "or a lint rule id such as GV103 (`gradverify explain lint` lists them).",
        ]
    )


def _rule_list() -> str:
    """Every lint rule from the registry, title and remedy, in the order of their ids."""
    lines = ["The rules (`gradverify explain GV101` for one):"]
    for rule, (title, remedy) in LINT_RULES.items():
        lines.append(f"  {rule}  {title}")
        lines += textwrap.wrap(
            f"Fix: {remedy}.", width=88, initial_indent=" " * 9, subsequent_indent=" " * 9
        )
    return "\n".join(lines)
