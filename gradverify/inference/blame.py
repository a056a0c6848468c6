"""What forward's complaint was about when it rejected every guess: the shapes, the dtypes,
the values, or none of them (an AttributeError, a missing name), so that the reason
inference stopped blames what forward blamed. "forward rejected every shape" is said only
where the complaint is about shapes.

Importing this module never imports torch.
"""

from __future__ import annotations

import re

# torch's and users' words for a dtype; `cuda` is not one (gradverify.inference.search.precision).
_DTYPE = re.compile(
    r"\b(?:dtype|scalar type|float64|float32|float16|bfloat16|double|half|complex(?:64|128)?|"
    r"int64|long)\b|not implemented for '",
    re.IGNORECASE,
)
_SHAPE = re.compile(
    r"\b(?:shapes?|sizes?|dim(?:ension)?s?|rank|broadcast\w*|mat[12]|numel|unpack|indices|"
    r"index|view|reshape|stride|\dD|torch\.Size|elements?)\b|\[\d|\d+ ?x ?\d+|must match",
    re.IGNORECASE,
)
# A bound on a value: `alpha must be > 1`, `p must be positive`, `expected finite values`.
_VALUE = re.compile(
    r"\b(?:positive|negative|non-?negative|greater|less|between|range|finite|nan|inf|zero|"
    r"domain|probabilit\w*|[<>]=?)|[<>]=?",
    re.IGNORECASE,
)
# Exceptions that say the code itself failed, whatever it was given.
_CODE_ERRORS = ("AttributeError", "NameError", "ImportError", "ModuleNotFoundError")


def rejected_every(complaint: str) -> str:
    """`forward rejected every shape tried` where `complaint` (forward's first, as
    `Type: message`) is about shapes; about dtypes, values, or neither: said so."""
    kind = complaint.split(":", 1)[0].strip()
    if kind in _CODE_ERRORS:
        return "forward raised on every input tried"
    if _DTYPE.search(complaint):
        return "forward rejected every dtype tried"
    if _SHAPE.search(complaint):
        return "forward rejected every shape tried"
    if _VALUE.search(complaint):
        return "forward rejected every value tried"
    return "forward raised on every input tried"
