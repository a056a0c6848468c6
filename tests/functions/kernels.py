"""Kernel-style Functions: float32-only ones (they refuse float64, as GPU kernels do), ones that
compute in float32 whatever they are given, and a CUDA-only one; each correct Function has a
buggy twin that drops a term or takes a wrong branch.

The reference callables at the bottom are plain PyTorch, for the `reference` check.
"""

from __future__ import annotations

from typing import Any

import torch

KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
Grad = torch.Tensor | None


def _kernel_dtype(x: torch.Tensor) -> None:
    """What a Triton or CUDA kernel's launcher says to a float64 tensor."""
    if x.dtype not in KERNEL_DTYPES:
        raise TypeError(f"kernel supports float16/bfloat16/float32, got {x.dtype}")


def _float32_only(x: torch.Tensor) -> None:
    if x.dtype != torch.float32:
        raise TypeError(f"kernel supports float32 only, got {x.dtype}")


class SiLUMulFloat32(torch.autograd.Function):
    """silu(a) * b, float32 only (TypeError otherwise): correct."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        _float32_only(a)
        _float32_only(b)
        ctx.save_for_backward(a, b)
        return a * torch.sigmoid(a) * b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Grad, Grad]:
        a, b = ctx.saved_tensors
        sig = torch.sigmoid(a)
        silu = a * sig
        grad_a = grad_output * b * (sig + silu * (1 - sig)) if ctx.needs_input_grad[0] else None
        return grad_a, grad_output * silu if ctx.needs_input_grad[1] else None


class SiLUMulFloat32DroppedTerm(SiLUMulFloat32):
    """SiLUMulFloat32 whose gradient of `a` drops the a·σ(1-σ) term: wrong for `a` only."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Grad, Grad]:
        a, b = ctx.saved_tensors
        sig = torch.sigmoid(a)
        grad_a = grad_output * b * sig if ctx.needs_input_grad[0] else None
        return grad_a, grad_output * a * sig if ctx.needs_input_grad[1] else None


class TanhFloat32(torch.autograd.Function):
    """tanh(x), float16/bfloat16/float32 (TypeError for float64): correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _kernel_dtype(x)
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * (1 - y * y)


class TanhFloat32WrongBranch(TanhFloat32):
    """TanhFloat32 whose backward takes the wrong branch for x < -0.5: slope 1 there."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        slope = torch.where(y < -0.4621, torch.ones_like(y), 1 - y * y)
        return grad_output * slope


class HalfOnly(torch.autograd.Function):
    """x³/3, float16/bfloat16 only (TypeError for float32 and float64): correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        if x.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError(f"kernel supports float16/bfloat16 only, got {x.dtype}")
        ctx.save_for_backward(x)
        return x * x * x / 3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x * x


class GeluInFloat32(torch.autograd.Function):
    """gelu(x) (tanh form), computed in float32 whatever it is given, the result cast back to
    the input's dtype; backward likewise: correct."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        inner = x.float()
        return torch.nn.functional.gelu(inner, approximate="tanh").to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        z = x.float()
        k = 0.7978845608028654
        inner = k * (z + 0.044715 * z**3)
        t = torch.tanh(inner)
        slope = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * k * (1 + 3 * 0.044715 * z * z)
        return (grad_output.float() * slope).to(grad_output.dtype)


class GeluInFloat32DroppedTerm(GeluInFloat32):
    """GeluInFloat32 whose backward drops the 0.5·x·tanh' term."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        z = x.float()
        t = torch.tanh(0.7978845608028654 * (z + 0.044715 * z**3))
        return (grad_output.float() * 0.5 * (1 + t)).to(grad_output.dtype)


class SoftplusFloat32SignFlip(torch.autograd.Function):
    """softplus(x), float32 only; backward is −1× the truth where x < 0 (sign bug there)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _float32_only(x)
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        slope = torch.sigmoid(x)
        return grad_output * torch.where(x < 0, -slope, slope)


class CudaOnlySquare(torch.autograd.Function):
    """x², on CUDA tensors only (forward asserts it), as a Triton kernel's launcher does."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        assert x.is_cuda, "this kernel runs on CUDA only"
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * grad_output * x


def softplus(x: torch.Tensor) -> torch.Tensor:
    """The reference of SoftplusFloat32SignFlip."""
    return torch.nn.functional.softplus(x)


class ClampFloat32(torch.autograd.Function):
    """x.clamp(-1, 1), float32 only, slope 0 at the bounds: correct, kinked at ±1."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _float32_only(x)
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * ((x > -1.0) & (x < 1.0)).to(grad_output.dtype)


class LogSumExpFloat32(torch.autograd.Function):
    """logsumexp over the last dim, max-shifted, float32 only: correct at any offset (at 1000
    its float32 values round to 6e-5, and far steps see it as the max: linear)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _float32_only(x)
        shift = x.amax(-1, keepdim=True)
        output = ((x - shift).exp().sum(-1, keepdim=True).log() + shift).squeeze(-1)
        ctx.save_for_backward(x, output)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        x, output = ctx.saved_tensors
        return grad_output.unsqueeze(-1) * (x - output.unsqueeze(-1)).exp()


class ReciprocalFloat32NaNAtZero(torch.autograd.Function):
    """1/x, float32 only, whose backward divides by x - x.detach() (always 0): NaN gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        _float32_only(x)
        ctx.save_for_backward(x)
        return 1 / x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return -grad_output / (x * x) * (x - x) / (x - x)


class TanhFloat32Transformable(torch.autograd.Function):
    """tanh(x), float32 only, in the setup_context style with a generated vmap rule and a
    jvp, so that torch.func can transform it: correct."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        _float32_only(x)
        return torch.tanh(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad_output * (1 - y * y)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return x_tangent * (1 - y * y)
