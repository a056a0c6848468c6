"""Remember cases that passed, keyed by everything that could change their verdict.

The key covers the target's source, the spec of the case, the seed, and the versions of
gradverify and torch (read from package metadata, so a cached run never imports torch).
The source is the statements the Function (and its reference) can run, found by reading
the code, not importing it (spec.function_source): changing one Function of a file reruns
its cases only, changing a helper reruns every Function that calls it. Where that cannot be
told for sure, the key covers whole files: the target's module, the packages it sits in and
every project file it imports (spec.source_files). Only cases with no failure are stored; a
hit is reported as `pass (cached)`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from gradverify._version import __version__
from gradverify.results import Branches, Explored, Result, Status
from gradverify.run.tasks import Task
from gradverify.spec.function_source import function_source
from gradverify.spec.source_files import source_files, target_source_files

FORMAT = "v2"


class ResultCache:
    """A directory of passing cases, `.gradverify_cache/` by default (git-ignored)."""

    def __init__(self, directory: Path, project: Path | None = None) -> None:
        self.directory = directory / FORMAT
        self.root = directory
        self.project = (project or Path.cwd()).resolve()
        # Each task's key, made once: lookup and store would each read every file it covers.
        self._keys: dict[int, tuple[str | None, str]] = {}

    def lookup(self, task: Task) -> list[Result] | None:
        key, layout = self._key_and_layout(task)
        stored = self._read(key) if key is not None else None
        try:
            results = [_result(item) for item in stored["results"]] if stored else None
            moved = isinstance(stored, dict) and stored.get("layout", "") != layout
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        # The same statements, moved: a result that names a line would name the old one.
        if results and moved and any(result.source_line is not None for result in results):
            return None
        return results

    def store(self, task: Task, results: list[Result]) -> None:
        if not results or any(result.failed for result in results):
            return
        key, layout = self._key_and_layout(task)
        if key is not None:
            payload = {"results": [result.to_dict() for result in results], "layout": layout}
            self._write(key, payload)

    def lookup_inference(self, target: str) -> dict[str, Any] | None:
        """The inputs inferred for `target` (zero-config) while its source is unchanged."""
        key = self._inference_key(target)
        return self._read(key) if key is not None else None

    def store_inference(self, target: str, inferred: dict[str, Any]) -> None:
        key = self._inference_key(target)
        if key is not None:
            self._write(key, inferred)

    def _inference_key(self, target: str) -> str | None:
        files = target_source_files(target, self.project)
        if not files:
            return None
        parts = (FORMAT, "inference", __version__, _own_source_digest(), _version("torch"), target)
        return _digest(parts, files)

    def _read(self, key: str) -> Any:
        try:
            return json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _write(self, key: str, payload: dict[str, Any]) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text(
                    "# written by gradverify: the cache is not for version control\n*\n"
                )
            temporary = self.directory / f"{key}.{os.getpid()}.tmp"
            temporary.write_text(json.dumps(payload), encoding="utf-8")
            temporary.replace(self.directory / f"{key}.json")
        except OSError:
            pass  # a read-only checkout simply runs without a cache

    def key(self, task: Task) -> str | None:
        """The case's cache key, or None when its source cannot be found."""
        return self._key_and_layout(task)[0]

    def _key_and_layout(self, task: Task) -> tuple[str | None, str]:
        """The key, and where the keyed statements start ("" when whole files are keyed)."""
        if task.id not in self._keys:
            self._keys[task.id] = self._made_key(task)
        return self._keys[task.id]

    def _made_key(self, task: Task) -> tuple[str | None, str]:
        spec = task.entry.spec
        if spec.target is None:
            return None, ""
        case = task.spec_case()
        parts = (
            FORMAT, __version__, _own_source_digest(), _version("torch"),
            spec.model_dump_json(exclude={"cases"}), case.model_dump_json(), str(task.seed),
        )  # fmt: skip
        # Their code decides the verdict too.
        callables = [c for c in (spec.target, spec.reference, spec.expected_gradient) if c]
        source = function_source(callables, self.project)
        if source is not None:
            return _digest((*parts, "statements", *source.texts), []), source.layout
        files = target_source_files(spec.target, self.project)
        if not files:
            return None, ""
        for helper in callables[1:]:
            files = sorted({*files, *source_files(helper, self.project)})
        return _digest(parts, files), ""


def _digest(parts: tuple[str, ...], files: list[Path]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    for file in files:
        digest.update(str(file).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


@functools.cache
def _own_source_digest() -> str:
    """gradverify's own code: a changed check must not be answered from an old verdict."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # gradverify/, every subpackage too
    for file in sorted(package.rglob("*.py")):
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _result(item: dict[str, Any]) -> Result:
    fields = dict(item)
    fields["status"] = Status(fields["status"])
    for name in ("element", "mismatch_map"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    fields["notes"] = tuple(fields.get("notes", ()))
    fields["details"] = tuple(fields.get("details", ()))
    if fields.get("branches") is not None:
        fields["branches"] = Branches.from_dict(fields["branches"])
    if fields.get("explored") is not None:
        fields["explored"] = Explored(**fields["explored"])
    fields["seconds"] = 0.0
    return replace(Result(**fields), cached=True)
