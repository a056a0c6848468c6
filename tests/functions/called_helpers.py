"""Functions whose only branch lives in a function they call, never in their own forward
or backward (issue 23, inference that reaches the branches): a knee at x = -2 in a
module-level helper, and a SiLU whose buggy backward kernel (tests/functions/called_kernels.py,
launched as `kernel[grid](...)`) drops a term below -2. Each buggy twin is wrong only below
-2, where inputs drawn from [-1, 1] never go.
"""

from __future__ import annotations

from typing import Any

import torch

from tests.functions import called_kernels as kernels


def _knee(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < -2.0, -2.0 + 0.1 * (x + 2.0), x)


def _knee_grad(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    return torch.where(x < -2.0, 0.1 * grad, grad)


def _knee_grad_flat(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Bug: forgets the knee: the slope is 1 below -2 too."""
    return grad * torch.ones_like(x)


class HelperKnee(torch.autograd.Function):
    """y = x above -2, -2 + 0.1 (x + 2) below: forward and backward call module helpers."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return _knee(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return _knee_grad(x, grad_output)


class HelperKneeFlat(torch.autograd.Function):
    """HelperKnee whose backward helper forgets the knee: wrong only below x = -2."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return _knee(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return _knee_grad_flat(x, grad_output)


class MethodKnee(torch.autograd.Function):
    """The knee, its gradient in a static method of its own that backward calls."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return MethodKnee._knee(x)

    @staticmethod
    def _knee(x: torch.Tensor) -> torch.Tensor:
        return torch.where(x < -2.0, -2.0 + 0.1 * (x + 2.0), x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return MethodKnee._knee_grad(x, grad_output)

    @staticmethod
    def _knee_grad(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return torch.where(x < -2.0, 0.1 * grad, grad)


class MethodKneeFlat(torch.autograd.Function):
    """MethodKnee whose static gradient method forgets the knee: wrong only below x = -2."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return MethodKnee._knee(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return MethodKneeFlat._flat_grad(x, grad_output)

    @staticmethod
    def _flat_grad(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Bug: forgets the knee: the slope is 1 below -2 too."""
        return grad * torch.ones_like(x)


def _grid(count: int) -> tuple[int]:
    return (count,)


def _launch_forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    kernels.silu_forward[_grid(x.numel())](x.view(-1), y.view(-1), x.numel())
    ctx.save_for_backward(x)
    return y


def _launch_backward(ctx: Any, grad_output: torch.Tensor, kernel_name: str) -> torch.Tensor:
    """The backward kernel named, as a launcher picks one: `getattr(module, name)[grid]`."""
    (x,) = ctx.saved_tensors
    kernel = getattr(kernels, kernel_name)
    grad_output = grad_output.contiguous()
    grad_x = torch.empty_like(x)
    kernel[_grid(x.numel())](x.view(-1), grad_output.view(-1), grad_x.view(-1), x.numel())
    return grad_x


class KernelSiLU(torch.autograd.Function):
    """y = x * sigmoid(x) as two `@jit` kernels launched `kernel[grid](...)`, the backward one
    named by a string, as tests/functions/called_kernels.py writes them."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _launch_forward(ctx, x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return _launch_backward(ctx, grad_output, "silu_backward")


class KernelSiLUDroppedTerm(torch.autograd.Function):
    """KernelSiLU whose backward kernel drops a term below x = -2: wrong only there."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _launch_forward(ctx, x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return _launch_backward(ctx, grad_output, "silu_backward_dropped_term")


def _gate(t: torch.Tensor) -> torch.Tensor:
    return torch.where(t < -2.0, -2.0 + 0.1 * (t + 2.0), t)


def _gate_slope(t: torch.Tensor) -> torch.Tensor:
    return torch.where(t < -2.0, torch.full_like(t, 0.1), torch.ones_like(t))


def _gate_slope_flat(t: torch.Tensor) -> torch.Tensor:
    """Bug: forgets the knee: the slope is 1 below -2 too."""
    return torch.ones_like(t)


class ColumnGate(torch.autograd.Function):
    """y = x * gate(t): x (N, M), t (M,) one gate per column, with a knee at t = -2 in a
    helper that only `t` reaches (t is shaped unlike x, so x's wide case does not widen it).

    Args:
        x: (N, M)
        t: (M,)
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, t)
        return x * _gate(t)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, t = ctx.saved_tensors
        return grad_output * _gate(t), (grad_output * x).sum(0) * _gate_slope(t)


class ColumnGateFlat(torch.autograd.Function):
    """ColumnGate whose backward forgets the knee in t's gradient: wrong only below t = -2.

    Args:
        x: (N, M)
        t: (M,)
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, t)
        return x * _gate(t)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, t = ctx.saved_tensors
        return grad_output * _gate(t), (grad_output * x).sum(0) * _gate_slope_flat(t)


def _box_distance(p: torch.Tensor, half_extents: torch.Tensor) -> torch.Tensor:
    """The signed distance from points `p` to the box [-half_extents, half_extents]."""
    q = p.abs() - half_extents
    largest = q.max(dim=-1).values
    return torch.where(largest < 0, largest, q.clamp(min=0).norm(dim=-1))


def _box_gradients(
    p: torch.Tensor, half_extents: torch.Tensor, grad: torch.Tensor, inside_sign: float
) -> tuple[torch.Tensor, torch.Tensor]:
    q = p.abs() - half_extents
    largest, axis = q.max(dim=-1, keepdim=True)
    inside = torch.zeros_like(q).scatter(-1, axis, inside_sign)
    positive = q.clamp(min=0)
    beyond = positive / positive.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    grad_q = torch.where(largest < 0, inside, beyond) * grad[..., None]
    return (grad_q * p.sign()).sum_to_size(p.shape), (-grad_q).sum_to_size(half_extents.shape)


class HelperBoxSDF(torch.autograd.Function):
    """A box's signed distance whose comparison between the inputs (`|p| - h < 0`: inside)
    lives only in the helpers forward and backward call."""

    @staticmethod
    def forward(ctx: Any, p: torch.Tensor, half_extents: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(p, half_extents)
        return _box_distance(p, half_extents)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, half_extents = ctx.saved_tensors
        return _box_gradients(p, half_extents, grad, 1.0)


class HelperBoxSDFInsideSign(torch.autograd.Function):
    """HelperBoxSDF whose backward flips the sign inside the box: right outside it."""

    @staticmethod
    def forward(ctx: Any, p: torch.Tensor, half_extents: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(p, half_extents)
        return _box_distance(p, half_extents)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, half_extents = ctx.saved_tensors
        return _box_gradients(p, half_extents, grad, -1.0)
