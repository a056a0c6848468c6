"""Find spec files: in directories given on the command line, and for a bare target."""

from __future__ import annotations

from pathlib import Path

from gradverify.errors import SpecError
from gradverify.spec.load import SpecEntry, load_spec_file

SPEC_SUFFIXES = (".yaml", ".yml")
DEFAULT_SPEC_DIR = "specs"


def is_spec_path(argument: str) -> bool:
    """Whether a command-line argument names a spec file or a directory of them."""
    path = Path(argument)
    return argument.endswith(SPEC_SUFFIXES) or path.is_dir()


def spec_files(path: str | Path) -> list[Path]:
    """The spec files a path stands for: itself, or every *.yaml/*.yml below a directory."""
    path = Path(path)
    if path.is_dir():
        found = [p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file()]
        return sorted(found, key=lambda p: p.as_posix())
    return [path]


def find_specs_for_target(target: str, directory: str | Path = DEFAULT_SPEC_DIR) -> list[SpecEntry]:
    """Specs under `directory` whose `target` is exactly `target`; broken specs are ignored."""
    if not Path(directory).is_dir():
        return []
    matches: list[SpecEntry] = []
    for file in spec_files(directory):
        try:
            entries = load_spec_file(file)
        except SpecError:
            continue  # a broken unrelated spec must not stop a zero-config run
        matches.extend(entry for entry in entries if entry.spec.target == target)
    return matches
