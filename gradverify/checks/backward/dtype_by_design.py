"""A gradient in a lower dtype that forward chose on purpose: not precision lost in backward.

Forward that returns `(x > 0).float()` makes its output float32 whatever x is; grad_output
then comes in float32, and a backward that computes in it returns float32 for a float64
argument. Where every differentiable output is in the gradient's dtype and holds exact
values (0/1, counts: nothing forward computed was rounded by the cast), the dtype is
forward's design: a warning that names the line which made it, not a failure.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from typing import Any

import torch

from gradverify.target.loaded import Target, source_of
from gradverify.target.syntax import own_nodes, parsed_function

# Calls that make a tensor's dtype: `.float()`, `.half()`, `.to(torch.float32)`, `dtype=`.
_CASTS = frozenset({"float", "half", "bfloat16", "to", "type"})


def chosen_by_forward(grad: torch.Tensor, outputs: Sequence[Any]) -> bool:
    """Whether forward's differentiable outputs are all in `grad`'s dtype, with exact values."""
    floating = [o for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not floating or any(o.dtype != grad.dtype for o in floating):
        return False
    return all(bool((o.detach() == o.detach().round()).all()) for o in floating)


def cast_line(target: Target) -> str | None:
    """`file:line` of the first cast in forward's own code (`.float()`, `.to(...)`,
    `dtype=`), else forward's own line; None without source."""
    forward = getattr(target.obj, "forward", None) if target.is_function else None
    if forward is None:
        return None
    file, first = source_of(inspect.unwrap(forward), at_def=True)
    tree = parsed_function(forward)
    if file is None or first is None or tree is None:
        return None
    offset = first - tree.lineno
    for node in sorted(own_nodes(tree), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS)
            or any(keyword.arg == "dtype" for keyword in node.keywords)
        ):
            return f"{_short(file)}:{node.lineno + offset}"
    return f"{_short(file)}:{first}"


def _short(file: str) -> str:
    from pathlib import Path

    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except ValueError:
        return Path(file).name
