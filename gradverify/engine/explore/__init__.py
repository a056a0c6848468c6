"""`--explore N`: search a case's declared domain for an input that fails, and shrink it."""

from __future__ import annotations

from gradverify.engine.explore.search import CHECK, Outcome, explore

__all__ = ["CHECK", "Outcome", "explore"]
