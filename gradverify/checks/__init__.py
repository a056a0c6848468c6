"""The check registry, keyed by public check id: the catalogue's entries, their classes
imported only when a check is asked for (check modules import torch).

Each check is one module (or a package, when it has helpers of its own) named by its id;
what several checks use lives in checks/shared, and no check imports another.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gradverify.catalogue import CATALOGUE

if TYPE_CHECKING:
    from gradverify.checks.shared.case import Check

# id -> "module:Class", from the catalogue; the order is the order checks run in by default.
REGISTRY: dict[str, str] = {entry.id: entry.implementation for entry in CATALOGUE}


def get_check(check_id: str) -> Check:
    """An instance of the check registered under `check_id`."""
    module_name, class_name = REGISTRY[check_id].split(":")
    check_class = getattr(importlib.import_module(module_name), class_name)
    check: Check = check_class()
    return check
