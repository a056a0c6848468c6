"""Functions for inference that reaches the branches (issue 23): a branch on a comparison
between two inputs, whose bug lives on one side only, and a defaulted number forward uses in
arithmetic with tensors, whose gradient only a 0-d tensor for it checks. Each buggy one has a
correct twin that must pass."""

from __future__ import annotations

from typing import Any

import torch

# --- both sides of a comparison between inputs --------------------------------------------


class BoxSDF(torch.autograd.Function):
    """Signed distance from points `p` to the box [-half_extents, half_extents]: inside (every
    coordinate within its extent) the largest of |p| - h, outside the length of its positive
    part. backward works from the inputs, so that it is differentiable in turn."""

    @staticmethod
    def forward(ctx: Any, p: torch.Tensor, half_extents: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(p, half_extents)
        q = p.abs() - half_extents
        largest = q.max(dim=-1).values
        if (largest < 0).all():
            return largest
        return torch.where(largest < 0, largest, q.clamp(min=0).norm(dim=-1))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, half_extents = ctx.saved_tensors
        q = p.abs() - half_extents
        largest, axis = q.max(dim=-1, keepdim=True)
        inside = torch.zeros_like(q).scatter(-1, axis, 1.0)
        positive = q.clamp(min=0)
        beyond = positive / positive.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        grad_q = torch.where(largest < 0, inside, beyond) * grad[..., None]
        grad_p = (grad_q * p.sign()).sum_to_size(p.shape) if ctx.needs_input_grad[0] else None
        grad_h = (-grad_q).sum_to_size(half_extents.shape) if ctx.needs_input_grad[1] else None
        return grad_p, grad_h


class BoxSDFInsideSign(BoxSDF):
    """BoxSDF whose backward flips the sign inside the box: right wherever a point lies outside."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, half_extents = ctx.saved_tensors
        q = p.abs() - half_extents
        largest, axis = q.max(dim=-1, keepdim=True)
        inside = torch.zeros_like(q).scatter(-1, axis, -1.0)
        positive = q.clamp(min=0)
        beyond = positive / positive.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        grad_q = torch.where(largest < 0, inside, beyond) * grad[..., None]
        return (grad_q * p.sign()).sum_to_size(p.shape), (-grad_q).sum_to_size(half_extents.shape)


# --- a defaulted number used in arithmetic with tensors: also a 0-d tensor -------------------


class ExpScale(torch.autograd.Function):
    """x * exp(alpha * x); alpha, 0.5 by default, gets its gradient where it is a tensor."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: Any = 0.5) -> torch.Tensor:
        tensors = [x, alpha] if isinstance(alpha, torch.Tensor) else [x]
        ctx.save_for_backward(*tensors)
        ctx.alpha = None if isinstance(alpha, torch.Tensor) else alpha
        return x * torch.exp(alpha * x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, Any]:
        x, *tensor_alpha = ctx.saved_tensors
        alpha = tensor_alpha[0] if tensor_alpha else ctx.alpha
        grad_x = grad * torch.exp(alpha * x) * (1 + alpha * x) if ctx.needs_input_grad[0] else None
        if not tensor_alpha or not ctx.needs_input_grad[1]:
            return grad_x, None
        grad_alpha = (grad * x * x * torch.exp(alpha * x)).sum().reshape(alpha.shape)
        return grad_x, grad_alpha


class ExpScaleAlphaGrad(ExpScale):
    """ExpScale whose gradient for a tensor alpha forgets a factor x: right for a number alpha."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, Any]:
        x, *tensor_alpha = ctx.saved_tensors
        alpha = tensor_alpha[0] if tensor_alpha else ctx.alpha
        grad_x = grad * torch.exp(alpha * x) * (1 + alpha * x) if ctx.needs_input_grad[0] else None
        if not tensor_alpha or not ctx.needs_input_grad[1]:
            return grad_x, None
        grad_alpha = (grad * x * torch.exp(alpha * x)).sum().reshape(alpha.shape)
        return grad_x, grad_alpha


class MulSameKind(torch.autograd.Function):
    """x * y for two tensors of one dtype and device: forward compares their metadata, never
    their values."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.dtype != y.dtype or x.device != y.device or x.shape[-1] != y.shape[-1] or x is y:
            raise TypeError("MulSameKind takes two distinct tensors of one dtype and device")
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, Any]:
        x, y = ctx.saved_tensors
        grad_x = (grad * y).sum_to_size(x.shape) if ctx.needs_input_grad[0] else None
        grad_y = (grad * x).sum_to_size(y.shape) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


# --- both sides of a comparison between a tensor and a number ------------------------------


class NormClip(torch.autograd.Function):
    """x scaled down to a norm of max_norm where its norm is larger, else x as it is."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, max_norm: float) -> torch.Tensor:
        norm = x.norm()
        ctx.save_for_backward(x)
        ctx.max_norm = max_norm
        if norm > max_norm:
            return x * (max_norm / norm)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        norm = x.norm()
        if norm > ctx.max_norm:
            unit = x / norm
            return (grad - unit * (grad * unit).sum()) * (ctx.max_norm / norm), None
        return grad.clone(), None


class NormClipDoublesBelow(NormClip):
    """NormClip whose backward doubles the gradient where x is left as it is: right wherever
    x is clipped."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        norm = x.norm()
        if norm > ctx.max_norm:
            unit = x / norm
            return (grad - unit * (grad * unit).sum()) * (ctx.max_norm / norm), None
        return 2 * grad, None
