"""Recorded numbers as a person writes them: `0.3` for a float32 0.3 (recorded as
0.30000001192092896) or for `0.1 + 0.2`, each the shortest decimal that gives back the same
value in the dtype it came from."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

LITERAL_DIGITS = 12  # a Python float literal: 0.1 + 0.2 is written 0.3


def _float32(value: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def _float16(value: float) -> int:
    return int(struct.unpack("<H", struct.pack("<e", value))[0])


def _bfloat16(value: float) -> int:
    bits = _float32(value)  # round to nearest even on the 16 bits bfloat16 drops
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


_STORED: dict[str, Callable[[float], int]] = {
    "float32": _float32,
    "float": _float32,
    "float16": _float16,
    "half": _float16,
    "bfloat16": _bfloat16,
}


def readable(value: float, dtype: str = "float64") -> float:
    """The shortest decimal that is still `value` once stored in `dtype` (for float64, a
    literal's precision of LITERAL_DIGITS significant digits)."""
    if not math.isfinite(value) or value == 0:
        return value
    stored = _STORED.get(dtype)
    if stored is None:
        return float(f"{value:.{LITERAL_DIGITS}g}")
    try:
        target = stored(value)
        for digits in range(1, 10):  # 9 significant digits round-trip every float32
            shorter = float(f"{value:.{digits}g}")
            if stored(shorter) == target:
                return shorter
    except (OverflowError, struct.error):
        pass
    return value


def readable_values(values: Any, dtype: str) -> Any:
    """A nested list of recorded values, each float `readable` in `dtype`."""
    if isinstance(values, list):
        return [readable_values(item, dtype) for item in values]
    if isinstance(values, float):
        return readable(values, dtype)
    return values
