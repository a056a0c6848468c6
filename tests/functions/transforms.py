"""Functions for the `func` check: torch.func transforms over setup_context-style Functions."""

from __future__ import annotations

from typing import Any

import torch


class MulAddNeedsWrongIndex(torch.autograd.Function):
    """x * w + b. Bug: b's gradient is guarded by needs_input_grad[1] (w's), so it is right
    whenever w requires grad too (eager autograd, torch.func.vjp), and None when b alone is
    differentiated (torch.func.grad with respect to b)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x * w + b

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, w, _ = inputs
        ctx.save_for_backward(x, w)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, Any, Any]:
        x, w = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output * w
        if ctx.needs_input_grad[1]:
            grad_w = grad_output * x
        if ctx.needs_input_grad[1]:  # should be [2]
            grad_b = grad_output
        return grad_x, grad_w, grad_b


class SinNoVmapRule(torch.autograd.Function):
    """sin(x) in the setup_context style with a jvp, but no vmap rule: correct."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.sin()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x.cos()

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * x.cos()


class SquareWrongBackward(torch.autograd.Function):
    """x**2. Bug: backward returns 3x instead of 2x, everywhere (eager too)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x


class ReLUTransformable(torch.autograd.Function):
    """max(x, 0) with generate_vmap_rule and a jvp: correct (backward and jvp give 0 at 0)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * (x > 0)


class ExpInFloat32(torch.autograd.Function):
    """exp(x) computed in float32 whatever x's dtype: correct, with float32 rounding noise."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.float().exp().to(x.dtype)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (result,) = ctx.saved_tensors
        return grad_output * result


class SinRecomputedInBackward(torch.autograd.Function):
    """sin(x), whose backward recomputes forward under enable_grad and calls
    torch.autograd.grad (as checkpointing code does): right eagerly, but torch.func.grad
    and jacrev raise."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.sin()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            leaf = x.detach().requires_grad_()
            (grad_x,) = torch.autograd.grad(leaf.sin(), leaf, grad_output)
        return grad_x


def plain_sin(x: torch.Tensor) -> torch.Tensor:
    """A plain function of torch ops, not a Function."""
    return x.sin()


class HardTanhMaskedWrite(torch.autograd.Function):
    """x clamped to [-1, 1]. Bug (transforms only): backward writes through a boolean mask
    in place, which torch.vmap and torch.func.jacrev both refuse, at the same line."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        inside = x.abs() < 1.0
        grad_x = torch.zeros_like(x)
        grad_x[inside] = grad_output[inside]
        return grad_x
