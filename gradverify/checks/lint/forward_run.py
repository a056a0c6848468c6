"""GV101 for `lint`, at run time: tensors kept as attributes of ctx that matter.

An input or an output of forward kept on ctx (or a view of one, or any tensor that requires
grad) is what save_for_backward exists for: on ctx an output makes a reference cycle
(output -> graph node -> ctx -> output) that keeps memory alive, and an input or output
escapes the version check that catches its in-place modification before backward. A mask
(`ctx.mask = x > 0`) or a detached intermediate (`ctx.y = y.detach()`) has memory of its own
and no graph: keeping it on ctx is fine, and the guides do it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.inputs import fresh_copies
from gradverify.numerics.graph import function_node
from gradverify.usercode import UserCodeError, call_forward

# Attributes torch itself keeps on a graph node's __dict__ (holding tensors by design).
TORCH_ATTRIBUTES = frozenset(
    {"to_save", "saved_for_forward", "dirty_tensors", "non_differentiable"}
)


@dataclass(frozen=True)
class ForwardRun:
    """What running forward once showed: tensor attributes of ctx, or why it could not."""

    tensor_attributes: dict[str, str]
    error: UserCodeError | None = None
    note: str | None = None


def run_forward(context: CaseContext) -> ForwardRun:
    """Run forward on fresh copies and read the tensors left as attributes on its graph node."""
    arguments = fresh_copies(context.arguments)
    try:
        outputs = call_forward(context.target.call, arguments)
    except UserCodeError as error:
        if save_for_backward_crash(error):
            return ForwardRun({}, error)
        return ForwardRun({}, error, f"GV101 not checked: {error}")
    node = function_node(context.target, outputs)
    if node is None:
        return ForwardRun(
            {},
            note="GV101 not checked: forward built no graph node for this case (no argument "
            "requires grad, or no output is differentiable)",
        )
    attributes = {}
    for name, value in getattr(node, "__dict__", {}).items():
        described = _describe_tensors(value)
        if described is None or name in TORCH_ATTRIBUTES:
            continue
        # Only inputs, outputs and graph-connected tensors: a mask or a detached
        # intermediate on ctx is fine.
        problem = ctx_tensor_problem(value, arguments, outputs, context.describe_argument)
        if problem is not None:
            attributes[name] = f"{described}, {problem}"
    return ForwardRun(attributes)


def _describe_tensors(value: Any) -> str | None:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"a {dtype} tensor of shape {list(value.shape)}"
    if isinstance(value, list | tuple | dict):
        items = value.values() if isinstance(value, dict) else value
        count = sum(isinstance(item, torch.Tensor) for item in items)
        if count:
            return f"a {type(value).__name__} holding {count} tensor(s)"
    return None


def save_for_backward_crash(error: UserCodeError) -> bool:
    return isinstance(error.error, TypeError) and "save_for_backward" in str(error.error)


def ctx_tensor_problem(
    value: Any,
    arguments: Sequence[Any],
    outputs: Sequence[Any],
    describe_argument: Callable[[int], str],
) -> str | None:
    """Why a value kept on ctx should have been saved with save_for_backward ("which is
    argument 0 (x)"), or None. A list, tuple or dict is judged by the tensors it holds."""
    if isinstance(value, torch.Tensor):
        problem = _tensor_problem(value, arguments, outputs, describe_argument)
        return None if problem is None else f"which {problem}"
    if isinstance(value, list | tuple | dict):
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            if isinstance(item, torch.Tensor):
                problem = _tensor_problem(item, arguments, outputs, describe_argument)
                if problem is not None:
                    return f"of which one {problem}"
    return None


def _tensor_problem(
    value: torch.Tensor,
    arguments: Sequence[Any],
    outputs: Sequence[Any],
    describe_argument: Callable[[int], str],
) -> str | None:
    named = [
        *((describe_argument(i), a) for i, a in enumerate(arguments)),
        *((f"output {i}", o) for i, o in enumerate(outputs)),
    ]
    for name, tensor in named:
        if isinstance(tensor, torch.Tensor) and value is tensor:
            return f"is {name}"
    for name, tensor in named:
        if isinstance(tensor, torch.Tensor) and _shares_memory(value, tensor):
            return f"shares memory with {name}"
    if value.requires_grad:
        return "requires grad"
    return None


def _shares_memory(one: torch.Tensor, two: torch.Tensor) -> bool:
    """Views of the same storage (a view, `.detach()`, or `.data` of the other)."""
    try:
        first, second = one.untyped_storage(), two.untyped_storage()
    except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
        return False
    pointer = first.data_ptr()
    return pointer != 0 and first.nbytes() > 0 and pointer == second.data_ptr()
