"""`--explore N`: search a case's declared domain for an input that fails, and shrink it.

The search (gradverify.engine.explore.search) is imported only by a run that explores: its
imports (the shrinker, the YAML writer) stay off every other run's start-up.
"""

from __future__ import annotations

# The check that explored draws are judged by.
CHECK = "finite_difference"

__all__ = ["CHECK"]
