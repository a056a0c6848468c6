"""The user's Function in the autograd graph: its node, and what its backward itself returns.

A custom Function's node in the graph is the very ctx that forward (or setup_context) saw,
so calling `Function.backward(node, *grad_outputs)` gives backward's own return, before
autograd casts, reshapes or sums it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.target.loaded import Target


def function_node(target: Target, outputs: Sequence[Any]) -> Any:
    """The graph node of the user's Function among `outputs`, or None (a plain callable)."""
    if not target.is_function:
        return None
    for output in outputs:
        node = output.grad_fn if isinstance(output, torch.Tensor) else None
        if node is not None and getattr(type(node), "_forward_cls", None) is target.obj:
            return node
    return None


def backward_return(
    target: Target,
    outputs: Sequence[Any],
    arguments: Sequence[Any],
    grad_outputs: Sequence[Any],
) -> tuple[Any, ...]:
    """backward's own return, one value per argument, called on its node where there is one;
    for a plain callable, autograd's gradient of each argument (None where none reaches it).

    Raises whatever the user's code raises: callers decide what a crash means.
    """
    node = function_node(target, outputs)
    if node is not None:
        with torch.no_grad():
            raw = target.obj.backward(node, *grad_outputs)
        return raw if isinstance(raw, tuple) else (raw,)
    differentiable = [
        index
        for index, argument in enumerate(arguments)
        if isinstance(argument, torch.Tensor) and argument.requires_grad
    ]
    pairs = [
        (output, grad)
        for output, grad in zip(outputs, grad_outputs, strict=True)
        if isinstance(output, torch.Tensor) and output.requires_grad
    ]
    grads = torch.autograd.grad(
        [output for output, _ in pairs],
        [arguments[index] for index in differentiable],
        [grad for _, grad in pairs],
        retain_graph=True,
        allow_unused=True,
    )
    by_index = dict(zip(differentiable, grads, strict=True))
    return tuple(by_index.get(index) for index in range(len(arguments)))
