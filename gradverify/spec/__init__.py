"""The spec: YAML with positions, pydantic models, and discovery of spec files.

The names below are imported on first use, so that a light module of this package (the
pre-commit hook's changed-file selection, spec.config_file) imports neither pydantic nor yaml.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradverify.spec.discover import find_specs_for_target, is_spec_path, spec_files
    from gradverify.spec.load import SpecEntry, load_spec_file, parse_spec
    from gradverify.spec.models import (
        CHECK_IDS,
        Case,
        FunctionSpec,
        LiteralInput,
        TensorInput,
        Tolerance,
    )

_HOMES = {
    "find_specs_for_target": "discover",
    "is_spec_path": "discover",
    "spec_files": "discover",
    "SpecEntry": "load",
    "load_spec_file": "load",
    "parse_spec": "load",
    "CHECK_IDS": "models",
    "Case": "models",
    "FunctionSpec": "models",
    "LiteralInput": "models",
    "TensorInput": "models",
    "Tolerance": "models",
}

__all__ = [
    "CHECK_IDS",
    "Case",
    "FunctionSpec",
    "LiteralInput",
    "SpecEntry",
    "TensorInput",
    "Tolerance",
    "find_specs_for_target",
    "is_spec_path",
    "load_spec_file",
    "parse_spec",
    "spec_files",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gradverify.spec' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gradverify.spec.{home}"), name)
