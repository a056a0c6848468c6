"""Where `[tool.gradverify]` lives, and its plain settings read without validating them.

pydantic-free, for the pre-commit hook's fast path (gradverify.quick): a configuration it
cannot take as surely valid is left to spec.config, which validates it and names any mistake.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SECTION = ("tool", "gradverify")
DEFAULT_SPECS = ("specs",)


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml in `start` (default: the cwd) or a directory above it."""
    directory = (start or Path.cwd()).resolve()
    for candidate in (directory, *directory.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / "pyproject.toml"
    return None


def display(path: Path) -> str:
    """`path` as people type it from the cwd: relative when it is below the cwd or beside
    one of its ancestors (`../../specs` from a sub-directory), else absolute."""
    path, cwd = path.resolve(), Path.cwd().resolve()
    if path.parent == cwd or path.parent in cwd.parents or cwd in path.parents:
        return os.path.relpath(path, cwd)
    return str(path)


def plain_settings() -> tuple[Path | None, dict[str, Any]] | None:
    """The config file and its `[tool.gradverify]` keys when they are surely valid and plain
    (what spec.config would accept unchanged); None for anything else, left to spec.config."""
    file = find_pyproject()
    if file is None:
        return None, {}
    try:
        section = tomllib.loads(file.read_text(encoding="utf-8")).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    section = section.get("gradverify") if isinstance(section, dict) else None
    if section is None:
        return None, {}
    if not isinstance(section, dict) or not all(_plain(k, v) for k, v in section.items()):
        return None
    return file, section


def _plain(key: str, value: Any) -> bool:
    """Whether `key = value` is one that spec.config.Settings accepts as it is (strict)."""
    if key == "specs":
        return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
    if key == "mode":
        return value in ("full", "randomized", "auto")
    if key == "jobs":
        return type(value) is int and value >= 1
    if key == "explore":
        return type(value) is int and 0 <= value <= 10_000
    if key == "timeout":
        return type(value) in (int, float) and math.isfinite(value) and value > 0
    return False  # format, tolerance, extra_checks, unknown keys: validated by spec.config
