"""Remember cases that passed, keyed by everything that could change their verdict.

The key covers the target's source (its module file, the packages it sits in, and every file
of the user's project it imports, found by reading `import` statements — nothing is
imported), the spec of the case, the seed, and the versions of gradverify and torch (read
from package metadata, so a cached run never imports torch). Only cases with no failure are
stored; a hit is reported as `pass (cached)`.
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
from gradverify.results import Result, Status
from gradverify.run.tasks import Task
from gradverify.spec.source_files import source_files, target_source_files

FORMAT = "v1"


class ResultCache:
    """A directory of passing cases, `.gradverify_cache/` by default (git-ignored)."""

    def __init__(self, directory: Path, project: Path | None = None) -> None:
        self.directory = directory / FORMAT
        self.root = directory
        self.project = (project or Path.cwd()).resolve()

    def lookup(self, task: Task) -> list[Result] | None:
        key = self.key(task)
        stored = self._read(key) if key is not None else None
        try:
            return [_result(item) for item in stored["results"]] if stored else None
        except (ValueError, KeyError, TypeError):
            return None

    def store(self, task: Task, results: list[Result]) -> None:
        if not results or any(result.failed for result in results):
            return
        key = self.key(task)
        if key is not None:
            self._write(key, {"results": [result.to_dict() for result in results]})

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
        target = task.entry.spec.target
        if target is None:
            return None
        files = target_source_files(target, self.project)
        if not files:
            return None
        for helper in (task.entry.spec.reference, task.entry.spec.expected_gradient):
            if helper is not None:  # their code decides the verdict too
                files = sorted({*files, *source_files(helper, self.project)})
        spec = task.entry.spec
        case = next(c for c in spec.cases if c.name == task.case)
        parts = (
            FORMAT, __version__, _own_source_digest(), _version("torch"),
            spec.model_dump_json(exclude={"cases"}), case.model_dump_json(), str(task.seed),
        )  # fmt: skip
        return _digest(parts, files)


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
    fields["seconds"] = 0.0
    return replace(Result(**fields), cached=True)
