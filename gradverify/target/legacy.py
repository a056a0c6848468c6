"""A legacy Function: forward written as an instance method, as before torch 1.3. torch
refuses to run one the way it was written to be called (`Legacy()(x)` raises "Legacy autograd
function with non-static forward method is deprecated"), so it is a failure that says so,
never a target whose inputs "forward rejected every shape" of."""

from __future__ import annotations

import inspect
from typing import Any

# What the failure says first; gradverify.run.failures knows a refused target by it.
REFUSED = "torch refuses to run it"


def legacy_refusal(function_class: Any) -> str | None:
    """Why torch will not run `function_class`, a Function subclass, in a line; None when it
    is a new-style Function (forward a @staticmethod)."""
    forward = inspect.getattr_static(function_class, "forward", None)
    if not inspect.isfunction(forward):  # a staticmethod or classmethod object: new style
        return None
    if hasattr(forward, "__wrapped__"):  # a decorator over the staticmethod (`custom_fwd`)
        return None
    parameters = list(inspect.signature(forward).parameters)
    if not parameters or parameters[0] != "self":  # `forward = Other.forward`: takes ctx
        return None
    name = getattr(function_class, "__name__", "Function")
    return (
        f'{REFUSED}: a legacy Function (non-static forward; `{name}()(x)` raises "Legacy '
        'autograd function with non-static forward method is deprecated"); make forward and '
        "backward @staticmethods that take ctx, and call it as "
        f"`{name}.apply(x)`"
    )
