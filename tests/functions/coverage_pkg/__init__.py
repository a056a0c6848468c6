"""A package for `gradverify check PACKAGE`: its Functions and op are defined in its modules;
this file only re-exports one, which does not make it a second Function."""

from tests.functions.coverage_pkg.ops import Cube

__all__ = ["Cube"]
