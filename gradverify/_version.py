"""The version, in a module of its own so that reading it imports nothing else."""

from __future__ import annotations

__version__ = "0.1.0"
