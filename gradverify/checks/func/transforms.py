"""The torch.func transforms as `func` runs them, and what their crashes most likely mean.

Each transform differentiates the Function's differentiable outputs with respect to the
arguments that require grad; literals and the other tensors are closed over. Results come
back as Jacobian-shaped blocks per argument ([rows, elements]: one row per output element for
jacrev and jacfwd, one row for the projections grad and vjp), in float64.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.numerics import seeded
from gradverify.numerics.jacobian import OutputLayout
from gradverify.usercode import user_code

GRAD = "torch.func.grad"
VJP = "torch.func.vjp"
JACREV = "torch.func.jacrev"
JACFWD = "torch.func.jacfwd"
PROJECTED = (GRAD, VJP)  # one row each: a weighting of the outputs, not a full Jacobian

Blocks = dict[int, torch.Tensor]  # argument index -> [rows, elements of the argument]


@dataclass(frozen=True)
class Transforms:
    """The case as the transforms see it: arguments (float64, none requiring grad), the ones
    differentiated, the outputs that count, and the seeded weights of grad and vjp."""

    call: Callable[..., Any]
    arguments: tuple[Any, ...]
    wrt: tuple[int, ...]
    layout: OutputLayout
    weights: tuple[torch.Tensor, ...]  # grad: the scalar Σ w·y over the selected outputs
    cotangents: tuple[torch.Tensor, ...]  # vjp's v, one per selected output

    def outputs(self, *differentiated: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The selected outputs as a function of the differentiated arguments alone."""
        full = list(self.arguments)
        for index, value in zip(self.wrt, differentiated, strict=True):
            full[index] = value
        produced = self.call(*full)
        produced = produced if isinstance(produced, tuple) else (produced,)
        return tuple(produced[index] for index in self.layout.indices)

    @property
    def primals(self) -> tuple[torch.Tensor, ...]:
        return tuple(self.arguments[index] for index in self.wrt)

    def weighting(self, transform: str) -> tuple[torch.Tensor, ...]:
        """What a projected transform weights the selected outputs with: grad's w, vjp's v."""
        return self.weights if transform == GRAD else self.cotangents

    def run_grad(self) -> Blocks:
        """torch.func.grad of Σ w·y, one argument at a time: [1, elements] each."""
        return {index: self._grad(index) for index in self.wrt}

    def _grad(self, index: int) -> torch.Tensor:
        """torch.func.grad of Σ w·y with respect to argument `index` alone: [1, elements]."""
        position = self.wrt.index(index)

        def scalar(*differentiated: torch.Tensor) -> torch.Tensor:
            return _weighted(self.outputs(*differentiated), self.weights)

        with quiet(), user_code(GRAD):
            gradient = torch.func.grad(scalar, argnums=position)(*self.primals)
        return _row(gradient, self.arguments[index])

    def run_vjp(self) -> Blocks:
        """vᵀJ for every differentiated argument at once: [1, elements] each."""
        with quiet(), user_code(VJP):
            pullback = torch.func.vjp(self.outputs, *self.primals)[1]
            gradients = pullback(self.cotangents)
        return {
            index: _row(gradient, self.arguments[index])
            for index, gradient in zip(self.wrt, gradients, strict=True)
        }

    def run_jacrev(self) -> Blocks:
        return self._jacobian(torch.func.jacrev, JACREV)

    def run_jacfwd(self) -> Blocks:
        return self._jacobian(torch.func.jacfwd, JACFWD)

    def _jacobian(self, transform: Callable[..., Any], name: str) -> Blocks:
        """Full Jacobians, one block per argument: rows of every selected output in turn."""
        argnums = tuple(range(len(self.wrt)))
        with quiet(), user_code(name):
            jacobian = transform(self.outputs, argnums=argnums)(*self.primals)
        blocks: Blocks = {}
        for position, index in enumerate(self.wrt):
            columns = self.arguments[index].numel()
            pieces = [
                per_output[position].detach().reshape(-1, columns).to(torch.float64)
                for per_output in jacobian
            ]
            blocks[index] = (
                torch.cat(pieces)
                if pieces
                else torch.zeros(
                    0, columns, dtype=torch.float64, device=self.arguments[index].device
                )
            )
        return blocks


def transforms_for(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    wrt: Sequence[int],
    layout: OutputLayout,
    outputs: Sequence[torch.Tensor],
    generator: torch.Generator,
) -> Transforms:
    """The case's transforms, with seeded weights and cotangents for each selected output
    (in the output's dtype: vjp wants cotangents like its outputs)."""
    detached = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in arguments)
    weights = tuple(_draw(output, generator) for output in outputs)
    cotangents = tuple(_draw(output, generator) for output in outputs)
    return Transforms(call, detached, tuple(wrt), layout, weights, cotangents)


def _draw(output: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return seeded.normal(output.shape, generator, output.device).to(output.dtype)


def flat_weights(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """The weights of every selected output as one row: [1, rows]."""
    return torch.cat([w.reshape(-1).to(torch.float64) for w in weights]).reshape(1, -1)


def _weighted(outputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    device = outputs[0].device if outputs else torch.device("cpu")
    total = sum(
        (
            (output * weight.to(output.dtype)).sum()
            for output, weight in zip(outputs, weights, strict=True)
        ),
        torch.zeros((), dtype=torch.float64, device=device),
    )
    assert isinstance(total, torch.Tensor)
    return total


def _row(gradient: torch.Tensor | None, argument: torch.Tensor) -> torch.Tensor:
    if gradient is None:
        return torch.zeros(1, argument.numel(), dtype=torch.float64, device=argument.device)
    return gradient.detach().reshape(1, -1).to(torch.float64)


@contextmanager
def quiet() -> Iterator[None]:
    """The transforms without the warnings torch emits on first use (forward-mode AD scripts
    its decompositions with the deprecated torch.jit.script); restored on exit."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*torch.jit.script.*")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\..*")
        yield


# torch's words -> what they mean for the user's code, first match wins.
_CRASH_LEADS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("must override the setup_context",),
        "a Function this one calls (in forward, backward or jvp) is in the classic style: "
        "give it a forward without ctx and a setup_context(ctx, inputs, output) staticmethod",
    ),
    (
        ("does not have vmap support",),
        "a Function this one calls has no vmap rule: set generate_vmap_rule = True on it, or "
        "write its vmap staticmethod",
    ),
    (
        ("is not possible because", "inplace", "in-place"),
        "an in-place write of a batched value into a tensor that is not batched (e.g. "
        "`grad_x = torch.zeros_like(x); grad_x[...] = grad_output`, where grad_output is "
        "batched and x is not): build the result out of place (torch.where, "
        "torch.nn.functional.pad, torch.cat)",
    ),
    (
        (".item()", "data-dependent control flow"),
        "a tensor's value read in Python (.item(), float(), `if tensor:`): under a transform "
        "tensors are symbolic; keep values as tensors and branch with torch.where",
    ),
    (
        ("requires_grad_()", "autograd.functional", "autograd.grad"),
        "backward calls torch.autograd.grad or requires_grad_ (e.g. to recompute forward): "
        "torch.func cannot nest eager autograd; compute the gradient with plain operations "
        "from what setup_context saves",
    ),
    (
        ("data pointer", "accessing `data`", ".numpy()", "numpy"),
        "code that leaves torch (.numpy(), .data, data_ptr, a C++ extension): under a "
        "transform tensors are wrappers without storage; stay in torch operations",
    ),
)

_WHERE = {
    GRAD: "torch.func.grad runs forward, setup_context and backward on wrapped tensors",
    VJP: "torch.func.vjp runs forward, setup_context and backward on wrapped tensors",
    JACREV: "jacrev runs backward under torch.vmap, one batch entry per output element",
    JACFWD: "jacfwd runs forward and jvp under torch.vmap, one batch entry per input element",
}


def crash_hint(transform: str, message: str) -> str:
    """What a transform's crash most likely means, from torch's words."""
    lead = next(
        (hint for words, hint in _CRASH_LEADS if any(word in message for word in words)), None
    )
    where = _WHERE.get(transform, "")
    if lead is None:
        return (
            f"the Function works eagerly but not under {transform}: {where}; likely code "
            "there that a transform cannot follow"
        )
    return f"{where}: likely {lead}"
