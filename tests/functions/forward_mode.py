"""Functions with forward-mode AD (`jvp`) or `torch.vmap` support, correct or carrying one bug."""

from __future__ import annotations

from typing import Any

import torch

# --- jvp -------------------------------------------------------------------------------


class SquareWithJvp(torch.autograd.Function):
    """y = x**2, with backward and jvp (old style: forward takes ctx)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * x_tangent


class ScaledMulWithJvp(torch.autograd.Function):
    """y = alpha * a * b, alpha a float literal (setup_context style)."""

    @staticmethod
    def forward(a: torch.Tensor, b: torch.Tensor, alpha: float) -> torch.Tensor:
        return alpha * a * b

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        a, b, alpha = inputs
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)
        ctx.alpha = alpha

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        a, b = ctx.saved_tensors
        return ctx.alpha * grad_output * b, ctx.alpha * grad_output * a, None

    @staticmethod
    def jvp(ctx: Any, a_tangent: torch.Tensor, b_tangent: torch.Tensor, _: None) -> torch.Tensor:
        a, b = ctx.saved_tensors
        return ctx.alpha * (a_tangent * b + a * b_tangent)


class SquareJvpMissingFactor(torch.autograd.Function):
    """Bug: jvp forgets the factor 2 (backward is right)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x * x_tangent


class MulJvpDropsSecondTangent(torch.autograd.Function):
    """Bug: jvp of a * b ignores b's tangent."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a

    @staticmethod
    def jvp(ctx: Any, a_tangent: torch.Tensor, b_tangent: torch.Tensor) -> torch.Tensor:
        _, b = ctx.saved_tensors
        return a_tangent * b


class SinCosJvpWrongSign(torch.autograd.Function):
    """(sin x, cos x); bug: the tangent of cos has the wrong sign."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx: Any, grad_sin: torch.Tensor, grad_cos: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_sin * x.cos() - grad_cos * x.sin()

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (x,) = ctx.saved_tensors
        return x.cos() * x_tangent, x.sin() * x_tangent


class MulJvpOneTangentAtATime(torch.autograd.Function):
    """Bug: a shortcut in jvp keeps only a's term whenever a has a nonzero tangent."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a

    @staticmethod
    def jvp(ctx: Any, a_tangent: torch.Tensor, b_tangent: torch.Tensor) -> torch.Tensor:
        a, b = ctx.saved_tensors
        if bool(a_tangent.any()):
            return a_tangent * b
        return a * b_tangent


class ReLUWithJvp(torch.autograd.Function):
    """y = max(x, 0); at 0 both backward and jvp take the slope 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return x_tangent * (x > 0)


class ReLUJvpForgotMask(torch.autograd.Function):
    """Bug: jvp passes every tangent through, also where x < 0."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        return x_tangent.clone()


class JvpWithoutSaveForForward(torch.autograd.Function):
    """Bug: jvp reads ctx.saved_tensors, but forward saved them for backward only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * x_tangent


class JvpInFloat32(torch.autograd.Function):
    """y = 3x; bug: jvp computes the tangent in float32 whatever the input's dtype."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 3 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 3 * grad_output

    @staticmethod
    def jvp(ctx: Any, x_tangent: torch.Tensor) -> torch.Tensor:
        return 3 * x_tangent.float()


# --- vmap ------------------------------------------------------------------------------


class SquareGeneratedVmap(torch.autograd.Function):
    """y = x**2, batched by torch (generate_vmap_rule needs the setup_context style)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class SumDimVmap(torch.autograd.Function):
    """y = x.sum(dim), with a hand-written vmap rule that shifts dim past the batch dimension."""

    @staticmethod
    def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.sum(dim)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, dim = inputs
        ctx.dim = dim % x.dim()
        ctx.input_shape = x.shape

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output.unsqueeze(ctx.dim).expand(ctx.input_shape), None

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], x: torch.Tensor, dim: int) -> tuple[Any, int]:
        x = x.movedim(in_dims[0], 0)
        return SumDimVmap.apply(x, dim % (x.dim() - 1) + 1), 0


class SumDimVmapForgotShift(torch.autograd.Function):
    """Bug: the vmap rule moves the batch to dim 0 but does not shift `dim` past it."""

    @staticmethod
    def forward(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.sum(dim)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, dim = inputs
        ctx.dim = dim % x.dim()
        ctx.input_shape = x.shape

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output.unsqueeze(ctx.dim).expand(ctx.input_shape), None

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], x: torch.Tensor, dim: int) -> tuple[Any, int]:
        x = x.movedim(in_dims[0], 0)
        return SumDimVmapForgotShift.apply(x, dim), 0


class ExpVmapWrongOutDims(torch.autograd.Function):
    """Bug: the vmap rule moves the batch to the last dim, but says it is at dim 0."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.exp()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (result,) = ctx.saved_tensors
        return grad_output * result

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], x: torch.Tensor) -> tuple[Any, int]:
        return ExpVmapWrongOutDims.apply(x.movedim(in_dims[0], -1)), 0


class _BatchedSquareKernel(torch.autograd.Function):
    """The "fused batched kernel" of SquareVmapWrongBatchedBackward; its backward lacks the 2."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * x


class SquareVmapWrongBatchedBackward(torch.autograd.Function):
    """Bug: batched values are right, but the batched path's gradient is half the true one."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], x: torch.Tensor) -> tuple[Any, int]:
        return _BatchedSquareKernel.apply(x.movedim(in_dims[0], 0)), 0


class GeneratedVmapWithCtxForward(torch.autograd.Function):
    """Bug: generate_vmap_rule with a forward that takes ctx, which torch.vmap refuses."""

    generate_vmap_rule = True

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


class NoisyGeneratedVmap(torch.autograd.Function):
    """y = x + noise: correct, but random, which torch.vmap refuses by default."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x + 1e-3 * torch.rand_like(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        pass

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output


def plain_square(x: torch.Tensor) -> torch.Tensor:
    """A plain callable, not a Function: it has neither jvp nor vmap rule of its own."""
    return x * x
