"""Which of autograd.Function's optional methods a target overrides (jvp, vmap)."""

from __future__ import annotations

import torch

from gradverify.target.loaded import Target


def defines_jvp(target: Target) -> bool:
    """Whether the target is a Function that overrides `torch.autograd.Function.jvp`."""
    return target.is_function and target.obj.jvp is not torch.autograd.Function.jvp


def defines_vmap(target: Target) -> bool:
    """Whether the target is a Function with a vmap staticmethod or generate_vmap_rule = True,
    or a custom op with a rule registered by register_vmap."""
    if target.op_name is not None:  # a custom op's own rule, from register_vmap
        return getattr(target.obj, "_vmap_fn", None) is not None
    if not target.is_function:
        return False
    function = target.obj
    overridden = function.vmap is not torch.autograd.Function.vmap
    return overridden or getattr(function, "generate_vmap_rule", False) is True
