"""The spec: YAML with positions, pydantic models, and discovery of spec files."""

from __future__ import annotations

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
