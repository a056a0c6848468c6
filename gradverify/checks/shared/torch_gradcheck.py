"""Running torch.autograd.gradcheck/gradgradcheck and mapping their failures back to arguments.

torch numbers inputs among those that require grad and outputs among those that are
differentiable; users think in forward's positional arguments. This module translates.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from gradverify.checks.shared.case import CaseContext
from gradverify.checks.shared.real_case import realify
from gradverify.numerics.complex_parts import Parts, pairs_of, second_order_parts
from gradverify.numerics.jacobian import OutputLayout, Selection
from gradverify.usercode import UserCodeError, call_forward, user_code

_MISMATCH = re.compile(
    r"(?:While considering the (real|imaginary) part of complex (?:outputs|inputs) only, )?"
    r"Jacobian (?:computed with forward mode )?mismatch for output (\d+) with respect to input (\d+)"
)

KNOWN_FAILURES: dict[str, tuple[str, str | None]] = {
    "Backward is not reentrant": (
        "backward is nondeterministic: running it twice on the same inputs gives different values",
        "random numbers or atomics in backward; if intended, raise tolerance.nondet_tol",
    ),
    "undefined output grads": (
        "backward does not handle an undefined (None) grad_output",
        "treat a None grad_output as zeros, or keep ctx.set_materialize_grads(True)",
    ),
    "backward not multiplied by grad_output": (
        "backward does not multiply a gradient by grad_output: it is right for a grad_output "
        "of 1 only",
        "multiply each gradient by grad_output (`func` names the argument, with -v)",
    ),
    "Numerical gradient for function expected to be zero": (
        "autograd sees no dependence on the inputs here (the result does not require grad: "
        "computed under torch.no_grad(), or through .detach() or .data), but its values change "
        "with them",
        None,
    ),
    "grad is incorrect": (
        "backward returns a gradient of the wrong shape, dtype or device",
        "see the `backward` check for details",
    ),
}


@dataclass(frozen=True)
class Mismatch:
    output: int  # torch's index among differentiable outputs
    input: int  # torch's index among inputs that require grad
    # For complex outputs torch checks the real and the imaginary part apart: which failed.
    part: str | None = None


def parse_mismatch(message: str) -> Mismatch | None:
    """torch's Jacobian mismatch: which output, which input, and for complex outputs which
    part ("While considering the imaginary part of complex outputs only, ...")."""
    found = _MISMATCH.search(message)
    if found is None:
        return None
    return Mismatch(int(found.group(2)), int(found.group(3)), found.group(1))


def explain_other_failure(message: str) -> tuple[str, str | None]:
    """A readable (message, hint) for a gradcheck error that is not a Jacobian mismatch."""
    for needle, (text, hint) in KNOWN_FAILURES.items():
        if needle in message:
            return text, hint
    first = message.strip().splitlines()[0] if message.strip() else "gradcheck failed"
    return first, None


def tensor_outputs(call: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """`call` with non-tensor outputs dropped, which torch's checkers cannot digest, and bool
    outputs (a mask beside the result) as integers: torch's central difference subtracts every
    output, and bool tensors cannot be subtracted. Positions are kept, so torch's "output i"
    still counts every tensor output."""

    def wrapped(*arguments: Any) -> tuple[torch.Tensor, ...]:
        return tuple(
            o.to(torch.int64) if o.dtype == torch.bool else o
            for o in call_forward(call, arguments)
            if isinstance(o, torch.Tensor)
        )

    return wrapped


def first_order_grads(
    call: Callable[..., Any], n_arguments: int, wrt: Sequence[int]
) -> Callable[..., list[tuple[int, torch.Tensor]]]:
    """What gradgradcheck differentiates: (args..., grad_outputs...) -> (argument, gradient) pairs.

    Like torch, it keeps only the gradients that are not None, so position i in its result is
    torch's "output i".
    """

    def grads(*values: Any) -> list[tuple[int, torch.Tensor]]:
        forward_arguments = list(values[:n_arguments])
        for index in wrt:  # perturbed copies arrive detached; they still need a graph
            if not forward_arguments[index].requires_grad:
                forward_arguments[index] = forward_arguments[index].detach().requires_grad_()
        with torch.enable_grad():
            outputs = [
                o
                for o in call_forward(call, forward_arguments)
                if isinstance(o, torch.Tensor) and o.requires_grad
            ]
            sources = [forward_arguments[i] for i in wrt]
            produced = torch.autograd.grad(
                outputs, sources, values[n_arguments:], create_graph=True, allow_unused=True
            )
        return [(index, g) for index, g in zip(wrt, produced, strict=True) if g is not None]

    return grads


def gradient_selection(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    wrt: Sequence[int],
    grad_outputs: Sequence[torch.Tensor],
) -> Selection:
    """The first-order gradients as outputs of (arguments..., grad_outputs...), as torch's
    gradgradcheck sees them; OutputLayout.indices names the argument of each gradient."""
    grads = first_order_grads(call, len(arguments), wrt)
    with user_code("backward"):
        produced = grads(*arguments, *grad_outputs)
    layout = OutputLayout(
        tuple(index for index, _ in produced), tuple(tuple(g.shape) for _, g in produced)
    )

    def evaluate(*perturbed: Any) -> list[torch.Tensor]:
        return [gradient for _, gradient in grads(*perturbed)]

    return Selection(layout, tuple(g for _, g in produced), evaluate)


@dataclass(frozen=True)
class SecondOrder:
    """The first-order gradients as outputs of (arguments..., grad_outputs...), as torch's
    gradgradcheck sees them; complex values as (real, imaginary) pairs."""

    selection: Selection
    values: tuple[Any, ...]  # the arguments, then the grad_outputs
    # torch's input j counts the arguments that require grad, then the grad_outputs
    positions: tuple[int, ...]
    parts: Parts


def second_order(
    context: CaseContext,
    arguments: tuple[Any, ...],
    wrt: Sequence[int],
    grad_outputs: Sequence[torch.Tensor],
) -> SecondOrder:
    """What gradgradcheck differentiates, for its full Jacobians and for randomized mode."""
    real = realify(context, arguments, wrt)
    parts = second_order_parts(real.parts, len(arguments), grad_outputs)
    arguments, pairs = real.arguments, pairs_of(grad_outputs)
    selection = gradient_selection(real.context.target.call, arguments, wrt, pairs)
    values = (*arguments, *pairs)
    return SecondOrder(selection, values, (*wrt, *range(len(arguments), len(values))), parts)


@contextmanager
def without_slow_mode_fallback() -> Iterator[None]:
    """torch's fast gradcheck without the full Jacobians it builds to word a failure.

    On a mismatch, torch's fast mode reruns slow mode (`_run_slow_mode_and_get_error`) to
    print both Jacobians: two forward calls per input element and n·m memory, out of reach
    for the inputs randomized mode is for. The message keeps "Jacobian mismatch for output j
    with respect to input i", which is all we read; group testing does the rest.
    """
    module = importlib.import_module("torch.autograd.gradcheck")
    original = getattr(module, "_run_slow_mode_and_get_error", None)
    if original is None:  # a torch without the fallback: nothing to do
        yield
        return
    name = "_run_slow_mode_and_get_error"
    setattr(module, name, lambda *args, **kwargs: "")
    try:
        yield
    finally:
        setattr(module, name, original)


def torch_complaint(
    context: CaseContext,
    check: str,
    call: Callable[..., Any],
    arguments: tuple[Any, ...],
    grad_outputs: Sequence[torch.Tensor] | None = None,
    fast_mode: bool = False,
) -> str | None:
    """Run torch's gradcheck (or, with grad_outputs, gradgradcheck) on `call` with the spec's
    tolerances: None if it passes, else its failure message. The user's crashes propagate."""
    tol = context.tolerance
    fallback = without_slow_mode_fallback() if fast_mode else nullcontext()
    try:
        with user_code(check), fallback:
            if grad_outputs is None:
                torch.autograd.gradcheck(
                    tensor_outputs(call), arguments, eps=tol.eps, atol=tol.atol, rtol=tol.rtol,
                    nondet_tol=tol.nondet_tol, fast_mode=fast_mode,
                )  # fmt: skip
            else:
                torch.autograd.gradgradcheck(
                    tensor_outputs(call), arguments, grad_outputs, eps=tol.eps, atol=tol.atol,
                    rtol=tol.rtol, nondet_tol=tol.nondet_tol, fast_mode=fast_mode,
                )  # fmt: skip
    except UserCodeError as error:
        if isinstance(error.error, GradcheckError):
            return str(error.error)
        raise
    return None
