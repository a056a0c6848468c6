"""Recorded cases into spec files: a new `specs/<name>.yaml` per target, or new cases
appended to the spec that already names the target (under any spelling). What is written
is never rewritten: a case is added only for a signature the file does not hold yet (each
recorded case carries its signature in a comment), and existing text is left as it is."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gradverify.errors import SpecError
from gradverify.inference.spec_text import file_name, flow
from gradverify.record.cases import RecordedCase, site_shown
from gradverify.spec.discover import find_specs_for_identity
from gradverify.spec.identity import TargetIdentity, identify
from gradverify.spec.load import SpecEntry, load_spec_file, parse_spec

HEADER = (
    "# Recorded by `gradverify record` from the calls of a real run: edit freely. Recording",
    "# again keeps every case here and adds only signatures this file does not hold yet.",
)
_SIGNATURE = re.compile(r"\(signatures? ([0-9a-f]{8}(?: [0-9a-f]{8})*)\)")
COVERED_PER_LINE = 8  # digests on a comment line of the signatures a case stands for


@dataclass
class SpecUpdate:
    """What recording did to one target's spec file."""

    target: str
    path: Path | None = None
    created: bool = False
    added: list[str] = field(default_factory=list)  # recorded case names
    variants: int = 0  # cases added to the recorded ones (what the run did not show)
    kept: int = 0  # cases that were there already
    skipped: list[str] = field(default_factory=list)  # why a recorded call was not written
    failed: str | None = None  # the traceback of a bug in gradverify on this target


def existing_specs(target: str, spec_paths: Sequence[str | Path]) -> list[SpecEntry]:
    """The specs in `spec_paths` that name `target` under any spelling."""
    identity = identify(target) or TargetIdentity(target)
    return find_specs_for_identity(identity, list(spec_paths))


def recorded_signatures(entries: Sequence[SpecEntry]) -> set[str]:
    """The signatures of the recorded cases the specs' files hold (from their comments)."""
    found: set[str] = set()
    for entry in entries:
        try:
            text = Path(entry.file or "").read_text(encoding="utf-8")
        except OSError:
            continue
        found.update(digest for digests in _SIGNATURE.findall(text) for digest in digests.split())
    return found


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`... when a case has it already."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}_{number}"
    taken.add(candidate)
    return candidate


def write_cases(
    update: SpecUpdate,
    cases: Sequence[RecordedCase],
    entry: SpecEntry | None,
    spec_dir: Path,
    project: Path,
    gradient: Sequence[str] = (),
) -> None:
    """Append `cases` to `entry`'s file, or write them to a new file in `spec_dir`, with the
    `gradient` lines (`gradient: surrogate   # ...`, as run.gradient_lines finds them) in a
    new file only: an existing spec keeps what it declares."""
    if not cases:
        return
    blocks = [case_text(case, project) for case in cases]
    if entry is not None and entry.file is not None:
        path = Path(entry.file)
        text = path.read_text(encoding="utf-8")
        appended = _appended(text, entry, blocks)
        if appended is not None and _adds(text, appended, path, len(blocks)):
            path.write_text(appended, encoding="utf-8")
            update.path = path
            _count(update, cases)
            return
    path = _free_path(spec_dir / file_name(update.target))
    lines = [*HEADER, f"target: {flow(update.target)}", *gradient, "cases:", *blocks]
    text = "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    load_spec_file(path)  # a SpecError here is our bug: the CLI reports it as one
    update.path, update.created = path, True
    _count(update, cases)


def _count(update: SpecUpdate, cases: Sequence[RecordedCase]) -> None:
    update.added = [case.name for case in cases if case.variant is None]
    update.variants = len(cases) - len(update.added)


def case_text(case: RecordedCase, project: Path, indent: str = "  ") -> str:
    """One case as YAML lines under `cases:`, commented with what was recorded."""
    where = site_shown(case.call.site, project)
    lines = [f"{indent}- name: {flow(case.name)}"]
    if case.variant is None:
        lines.append(f"{indent}  # recorded at {where} (signature {case.call.pattern})")
    else:
        lines.append(f"{indent}  # added to the case recorded at {where}: {case.variant}")
    for start in range(0, len(case.covers), COVERED_PER_LINE):
        digests = " ".join(case.covers[start : start + COVERED_PER_LINE])
        lines.append(f"{indent}  # stands for more recorded calls too (signatures {digests})")
    lines.append(f"{indent}  inputs:" if case.inputs else f"{indent}  inputs: []")
    items = [flow(item) for item in case.inputs]
    width = max((len(item) for item in items), default=0)
    for index, (item, note) in enumerate(zip(items, case.notes, strict=True)):
        if index in case.shrunk_from:
            note += f", shrunk from {list(case.shrunk_from[index])}"
        lines.append(f"{indent}    - {item.ljust(width)}   # {note}")
    return "\n".join(lines)


def _appended(text: str, entry: SpecEntry, blocks: Sequence[str]) -> str | None:
    """`text` with the case blocks inserted after the entry's last case, indented as its
    cases are; None where the cases are not a block list (flow style, none yet)."""
    if not entry.case_lines:
        return None
    lines = text.split("\n")
    last = max(entry.case_lines.values()) - 1
    if last >= len(lines) or not lines[last].lstrip().startswith("- "):
        return None
    indent = len(lines[last]) - len(lines[last].lstrip())
    end = last + 1
    for index in range(last + 1, len(lines)):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(lines[index]) - len(lines[index].lstrip()) <= indent:
            break
        end = index + 1
    indented = [_reindented(block, " " * indent) for block in blocks]
    return "\n".join([*lines[:end], *indented, *lines[end:]])


def _reindented(block: str, indent: str) -> str:
    return "\n".join(indent + line.removeprefix("  ") for line in block.split("\n"))


def _adds(text: str, appended: str, path: Path, count: int) -> bool:
    """Whether `appended` loads, with `count` cases more than `text`."""
    try:
        before = parse_spec(text, str(path))
        after = parse_spec(appended, str(path))
    except SpecError:
        return False
    cases = [sum(len(entry.spec.cases) for entry in entries) for entries in (before, after)]
    return cases[1] == cases[0] + count


def _free_path(path: Path, exists: Callable[[Path], bool] = Path.exists) -> Path:
    """`path`, or `name_2.yaml`... when a file of that name exists (it names another target)."""
    candidate, number = path, 1
    while exists(candidate):
        number += 1
        candidate = path.with_name(f"{path.stem}_{number}{path.suffix}")
    return candidate
