"""Calling backward as the checks do: one `Run` (forward, then autograd's gradients for
seeded grad_outputs, as compile, layouts and reference make them), seeded grad_outputs for
forward's outputs, and backward's raw return (backward, layouts and compile call it so)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.numerics import seeded
from gradverify.numerics.graph import backward_return
from gradverify.numerics.jacobian import differentiable_outputs
from gradverify.usercode import user_code

Gradients = tuple[Any, ...]  # one entry per forward argument


@dataclass(frozen=True)
class Run:
    """One run of an implementation on its own copies of the arguments: forward's outputs,
    the grad_outputs backward was given, and the gradient of each argument that requires
    grad (None: autograd found no path to it)."""

    arguments: tuple[Any, ...]
    outputs: tuple[Any, ...]
    grad_outputs: tuple[torch.Tensor | None, ...] = ()
    gradients: dict[int, torch.Tensor | None] = field(default_factory=dict)

    def gradient(self, index: int) -> torch.Tensor:
        """The gradient of argument `index`: zeros where there is none, as autograd treats it."""
        gradient = self.gradients.get(index)
        if gradient is not None:
            return gradient
        return torch.zeros_like(self.arguments[index]).detach()


@contextmanager
def same_random_numbers(seed: int) -> Iterator[None]:
    """The global RNG seeded with `seed` inside, and as it was outside: two runs of a
    Function that draws random numbers (dropout) draw the same ones."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed % (2**63))
        yield


def autograd_gradients(
    pairs: Sequence[tuple[torch.Tensor, torch.Tensor | None]],
    arguments: Sequence[Any],
    wrt: Sequence[int],
    phase: str = "backward",
    retain_graph: bool = False,
) -> dict[int, torch.Tensor | None]:
    """autograd's gradient of each argument in `wrt` for (output, grad_output) `pairs`,
    detached (None: no path to it, or nothing to differentiate)."""
    if not pairs or not wrt:
        return dict.fromkeys(wrt)
    with user_code(phase):
        found = torch.autograd.grad(
            [output for output, _ in pairs],
            [arguments[index] for index in wrt],
            [grad_output for _, grad_output in pairs],
            retain_graph=retain_graph,
            allow_unused=True,
        )
    return {
        index: gradient.detach() if gradient is not None else None
        for index, gradient in zip(wrt, found, strict=True)
    }


def seeded_grad_outputs(
    outputs: Sequence[Any], generator: torch.Generator
) -> list[torch.Tensor | None]:
    """Seeded random grad_outputs for differentiable outputs; zeros for the others, as autograd does."""
    differentiable = {index for index, _ in differentiable_outputs(outputs)}
    grads: list[torch.Tensor | None] = []
    for index, output in enumerate(outputs):
        if not isinstance(output, torch.Tensor):
            grads.append(None)
        elif index in differentiable:
            random = seeded.normal(output.shape, generator, output.device)
            grads.append(random.to(output.dtype))
        else:
            grads.append(torch.zeros_like(output))
    return grads


def run_backward(
    context: CaseContext,
    outputs: Sequence[Any],
    arguments: Sequence[Any],
    grad_outputs: Sequence[Any],
) -> Gradients:
    """backward's raw return, called directly where possible so that autograd casts nothing."""
    with user_code("backward"):
        return backward_return(context.target, outputs, arguments, grad_outputs)


def broadcasts_back(grad: torch.Size, shape: torch.Size) -> bool:
    """Whether autograd sums a gradient of shape `grad` back to `shape` (rather than refusing)."""
    try:
        return torch.broadcast_shapes(grad, shape) == grad
    except RuntimeError:
        return False
