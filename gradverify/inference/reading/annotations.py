"""Parameter annotations as forward writes them (strings, never evaluated), or as an op's
schema types them: the first thing inference reads of a parameter's kind.

Importing this module never imports torch.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# `Optional[X]` (or `Union[X, None]`): read as X, as `X | None` is.
OPTIONAL = re.compile(r"(?:Optional\[([\w.]+)\]|Union\[([\w.]+), None(?:Type)?\])")
# A Python annotation of a list of numbers, read as the schema's list types.
LIST_ANNOTATION = re.compile(r"(?:List|list|Sequence|Tuple|tuple)\[(int|float|bool)(?:, \.\.\.)?\]")
# An op's schema types, as the annotations above read them (`Tensor?` is a Tensor or None).
SCHEMA_ANNOTATIONS = {"Tensor?": "Tensor", "Scalar": "float", "Scalar?": "float"}


def annotations_of(target: Target) -> dict[str, str]:
    """Parameter annotations as written (strings), read without evaluating them; an op's
    types from its schema."""
    if target.schema_types:
        return {
            name: SCHEMA_ANNOTATIONS.get(kind, kind) for name, kind in target.schema_types.items()
        }
    forward = getattr(target.obj, "forward", target.obj) if target.is_function else target.obj
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return {}
    written = {}
    for name, parameter in signature.parameters.items():
        annotation = parameter.annotation
        if annotation is parameter.empty:
            continue
        spelled = annotation if isinstance(annotation, str) else str(annotation)
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        optional = OPTIONAL.fullmatch(spelled.replace("typing.", ""))
        if optional:  # Optional[torch.Tensor] -> Tensor, as `torch.Tensor | None` reads
            text = optional.group(1) or optional.group(2)
        written[name] = _schema_list(spelled) or text.rsplit(".", 1)[-1].removesuffix(" | None")
    return written


def _schema_list(text: str) -> str | None:
    """A Python list annotation as an op's schema writes it: `List[float]`, `list[int]`,
    `Sequence[int]`, `tuple[int, ...]` -> `float[]`, `int[]` (None for anything else)."""
    found = LIST_ANNOTATION.fullmatch(text.replace("typing.", "").replace("collections.abc.", ""))
    return f"{found.group(1)}[]" if found else None
