"""The check registry, keyed by public check id.

Check modules import torch, so they are imported only when a check is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradverify.checks.shared.case import Check

# id -> "module:Class"; the order is the order checks run in by default.
REGISTRY: dict[str, str] = {
    "lint": "gradverify.checks.lint:LintCheck",
    "forward": "gradverify.checks.forward:ForwardCheck",
    "backward": "gradverify.checks.backward:BackwardCheck",
    "layouts": "gradverify.checks.layouts:LayoutsCheck",
    "finite_difference": "gradverify.checks.finite_difference:FiniteDifferenceCheck",
    "gradcheck": "gradverify.checks.gradcheck:GradcheckCheck",
    "gradgradcheck": "gradverify.checks.gradgradcheck:GradgradcheckCheck",
    "expected_gradient": "gradverify.checks.expected_gradient:ExpectedGradientCheck",
    "reference": "gradverify.checks.reference:ReferenceCheck",
    "jvp": "gradverify.checks.jvp:JvpCheck",
    "vmap": "gradverify.checks.vmap:VmapCheck",
    "func": "gradverify.checks.func:FuncCheck",
    "opcheck": "gradverify.checks.opcheck:OpcheckCheck",
    "compile": "gradverify.checks.compile:CompileCheck",
}


def get_check(check_id: str) -> Check:
    """An instance of the check registered under `check_id`."""
    module_name, class_name = REGISTRY[check_id].split(":")
    check_class = getattr(importlib.import_module(module_name), class_name)
    check: Check = check_class()
    return check
