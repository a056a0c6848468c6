"""Full Jacobians: numerical by central differences, analytical by one backward per row.

A Jacobian block for argument i has one row per element of the (concatenated)
differentiable outputs and one column per element of argument i.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.usercode import call_forward, user_code

OutputFn = Callable[..., Sequence[torch.Tensor]]


@dataclass(frozen=True)
class OutputLayout:
    """Where each output's elements sit among the Jacobian's rows."""

    indices: tuple[int, ...]  # output positions, as forward returned them
    shapes: tuple[tuple[int, ...], ...]

    def locate(self, row: int) -> tuple[int, tuple[int, ...]]:
        """(output index, element within that output) of a Jacobian row."""
        for index, shape in zip(self.indices, self.shapes, strict=True):
            size = math.prod(shape)
            if row < size:
                return index, unravel(row, shape)
            row -= size
        raise IndexError(row)

    @property
    def rows(self) -> int:
        return sum(math.prod(shape) for shape in self.shapes)


def element_words(element: Sequence[int]) -> str:
    """`element [1, 0]`, or `its only element` for a 0-d tensor (whose index, [], says nothing)."""
    return f"element {list(element)}" if len(element) else "its only element"


def unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The multi-index of element `flat` in a row-major tensor of `shape` (() for 0-d)."""
    index: list[int] = []
    for dim in reversed(shape):
        flat, rest = divmod(flat, dim) if dim else (flat, 0)
        index.append(rest)
    return tuple(reversed(index))


def differentiable_outputs(outputs: Sequence[Any]) -> list[tuple[int, torch.Tensor]]:
    """Outputs that gradients flow through: floating/complex tensors that require grad."""
    return [
        (index, output)
        for index, output in enumerate(outputs)
        if isinstance(output, torch.Tensor)
        and output.requires_grad
        and (output.is_floating_point() or output.is_complex())
    ]


def analytical_jacobians(
    outputs: Sequence[torch.Tensor],
    arguments: Sequence[Any],
    wrt: Sequence[int],
    phase: str = "backward",
) -> dict[int, torch.Tensor]:
    """Rows of vᵀJ for one-hot v, one backward per output element, for each argument in `wrt`."""
    sources = [arguments[index] for index in wrt]
    rows = sum(output.numel() for output in outputs)
    jacobians = {index: arguments[index].new_zeros(rows, arguments[index].numel()) for index in wrt}
    row = 0
    for output in outputs:
        if not output.requires_grad:  # not connected to the graph: its rows stay zero
            row += output.numel()
            continue
        for element in range(output.numel()):
            one_hot = torch.zeros_like(output).reshape(-1)
            one_hot[element] = 1
            with user_code(phase):
                grads = torch.autograd.grad(
                    output,
                    sources,
                    one_hot.reshape(output.shape),
                    retain_graph=True,
                    allow_unused=True,
                )
            for index, grad in zip(wrt, grads, strict=True):
                if grad is not None:
                    jacobians[index][row] = grad.detach().reshape(-1).to(jacobians[index].dtype)
            row += 1
    return jacobians


def numerical_jacobian(
    function: OutputFn, arguments: Sequence[Any], index: int, eps: float, phase: str = "forward"
) -> torch.Tensor:
    """Central differences (f(x+eps) - f(x-eps)) / 2eps for each element of argument `index`."""
    base = arguments[index].detach().clone().contiguous()
    flat = base.view(-1)
    columns: list[torch.Tensor] = []
    for element in range(flat.numel()):
        original = flat[element].item()
        flat[element] = original + eps
        plus = _evaluate(function, arguments, index, base, phase)
        flat[element] = original - eps
        minus = _evaluate(function, arguments, index, base, phase)
        flat[element] = original
        columns.append((plus - minus) / (2 * eps))
    if not columns:
        return base.new_zeros(0, 0)
    return torch.stack(columns, dim=1)


def _evaluate(
    function: OutputFn, arguments: Sequence[Any], index: int, value: torch.Tensor, phase: str
) -> torch.Tensor:
    # Fresh copies each time: a forward that writes into its inputs must not compound.
    perturbed = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in arguments]
    for position, argument in enumerate(arguments):
        if isinstance(argument, torch.Tensor):
            perturbed[position].requires_grad_(argument.requires_grad)
    perturbed[index] = value.clone()
    with torch.no_grad(), user_code(phase):
        outputs = function(*perturbed)
    return torch.cat([output.detach().reshape(-1).to(value.dtype) for output in outputs])


@dataclass(frozen=True)
class Selection:
    """The outputs a Jacobian's rows stand for, and how to compute them at other arguments."""

    layout: OutputLayout
    outputs: tuple[torch.Tensor, ...]
    evaluate: Callable[..., list[torch.Tensor]]


def forward_selection(call: Callable[..., Any], arguments: Sequence[Any]) -> Selection | None:
    """forward's differentiable outputs (None: there are none)."""
    selected = differentiable_outputs(call_forward(call, arguments))
    if not selected:
        return None
    layout = OutputLayout(tuple(i for i, _ in selected), tuple(tuple(o.shape) for _, o in selected))

    def evaluate(*perturbed: Any) -> list[torch.Tensor]:
        produced = call_forward(call, perturbed)
        return [produced[i] for i in layout.indices]

    return Selection(layout, tuple(o for _, o in selected), evaluate)
