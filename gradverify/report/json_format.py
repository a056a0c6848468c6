"""`--format json`: the report's plain form, a public contract for CI scripts."""

from __future__ import annotations

import json
import math
from typing import Any

from gradverify.report.options import RenderOptions
from gradverify.results import Report


def render(report: Report, options: RenderOptions | None = None) -> str:
    return json.dumps(_finite(report.to_dict()), indent=2) + "\n"


def _finite(value: Any) -> Any:
    """JSON has no NaN or Infinity: write them as strings rather than emit invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
