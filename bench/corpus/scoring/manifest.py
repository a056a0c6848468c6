"""The corpus's truth: one entry per Function, read from manifest/<part>/<module>.yaml
(and packages.yaml for real packages), validated as it is read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

CORPUS = Path(__file__).resolve().parent.parent
PARTS = ("dev", "heldout")
SURROGATE_KINDS = ("step", "identity", "ignored-input", "stochastic", "words", "convention")


class Bug(BaseModel):
    model_config = ConfigDict(extra="forbid")
    argument: int
    name: str | None = None
    order: Literal[1, 2] = 1
    region: str = ""
    kind: str = ""


class Surrogate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["step", "identity", "ignored-input", "stochastic", "words", "convention"]
    lookalike: str | None = None


class Entry(BaseModel):
    """One Function's truth, as a manifest file writes it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    domain: str
    truth: Literal["correct", "buggy", "surrogate", "unjudged"]
    twin: str | None = None
    bug: Bug | None = None
    surrogate: Surrogate | None = None
    lookalike_of: str | None = None
    contract: str | None = None
    usage: str | None = None
    evidence: str = ""
    spec_note: str | None = None

    @model_validator(mode="after")
    def _fits_truth(self) -> Entry:
        if (self.truth == "buggy") != (self.bug is not None):
            raise ValueError("`bug` is given exactly when truth is buggy")
        if (self.truth == "surrogate") != (self.surrogate is not None):
            raise ValueError("`surrogate` is given exactly when truth is surrogate")
        return self


@dataclass(frozen=True)
class Function:
    """A Function of the corpus: where it lives and its truth."""

    part: str
    module: str  # dev.activations
    entry: Entry

    @property
    def target(self) -> str:
        return f"{self.module}:{self.entry.name}"

    @property
    def key(self) -> str:
        """How results name it: `ns::op` for a custom op, else module:Attr."""
        return self.entry.name if "::" in self.entry.name else self.target

    @property
    def truth(self) -> str:
        return self.entry.truth


class ManifestError(Exception):
    """A manifest file that does not read: its path and what is wrong."""


def _entries(path: Path) -> list[Entry]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if not isinstance(document, list):
            raise ManifestError(f"{path}: a manifest is a list of entries")
        return [Entry.model_validate(item) for item in document]
    except (yaml.YAMLError, ValidationError) as error:
        raise ManifestError(f"{path}: {error}") from None


def load(parts: Iterable[str] = PARTS, root: Path = CORPUS) -> list[Function]:
    """Every Function of the given parts, in file order."""
    functions = []
    for part in parts:
        for path in sorted((root / "manifest" / part).glob("*.yaml")):
            module = f"{part}.{path.stem}"
            functions.extend(Function(part, module, entry) for entry in _entries(path))
    return functions


class Package(BaseModel):
    """A real package and the Functions of it judged by hand."""

    model_config = ConfigDict(extra="allow")
    package: str
    pip: str
    part: Literal["dev", "heldout"]
    usage: str | None = None
    functions: list[PackageEntry]


class PackageEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    target: str
    truth: Literal["correct", "buggy", "surrogate", "unjudged"]
    bug: Bug | None = None
    surrogate: Surrogate | None = None
    contract: str | None = None
    evidence: str = ""


Package.model_rebuild()


def load_packages(root: Path = CORPUS) -> tuple[list[Package], list[Function]]:
    """packages.yaml: the packages, and their judged Functions as corpus Functions."""
    path = root / "packages.yaml"
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        packages = [Package.model_validate(item) for item in document]
    except (yaml.YAMLError, ValidationError) as error:
        raise ManifestError(f"{path}: {error}") from None
    functions = []
    for package in packages:
        for item in package.functions:
            module, _, name = item.target.partition(":")
            entry = Entry(
                name=name,
                domain=package.package,
                truth=item.truth,
                bug=item.bug,
                surrogate=item.surrogate,
                contract=item.contract,
                evidence=item.evidence,
            )
            functions.append(Function(package.part, module, entry))
    return packages, functions


def problems(functions: list[Function]) -> list[str]:
    """What makes a corpus not what issue 27 asks: twins and look-alikes that are missing."""
    found = []
    by_part: dict[str, dict[str, Function]] = {}
    for function in functions:
        names = by_part.setdefault(function.part, {})
        if function.entry.name in names:
            found.append(f"{function.target}: the name is used twice in part {function.part}")
        names[function.entry.name] = function
    for function in functions:
        names = by_part[function.part]
        entry = function.entry
        if entry.truth == "buggy" and entry.lookalike_of is None:
            twin = names.get(entry.twin or "")
            if twin is None or twin.truth != "correct":
                found.append(f"{function.target}: a buggy Function needs a correct twin")
        if entry.surrogate is not None:
            lookalike = names.get(entry.surrogate.lookalike or "")
            if lookalike is None or lookalike.truth != "buggy":
                found.append(f"{function.target}: a surrogate needs a buggy look-alike")
    return found
