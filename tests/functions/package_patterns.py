"""Functions written for this suite, each in a pattern met in real packages, whose inferred
inputs or verdicts went wrong there (tests/inference/test_package_patterns.py):

- a straight-through estimator nobody declared: backward passes grad_output through while
  forward snaps to a grid or takes its output from elsewhere; beside it a pass-through
  that forgot forward's factor (a bug);
- a Function whose class name says its gradient is a surrogate;
- callables called with two arguments, one of which must return a scalar (an implicit
  gradient around an event function);
- a sample shifted by a loc forward broadcasts (guessed at the sample's shape), beside a
  sum whose backward forgets to expand its gradient (a bug);
- coefficients backward needs one per pair of dims (a size mismatch on every guess).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class SnapToGrid(Function):
    """Rounds to a grid of 0.25; its backward hands the gradient on as it is."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class OneHotOfMax(Function):
    """The one-hot of each row's largest entry; the gradient goes to the scores."""

    @staticmethod
    def forward(ctx: Any, scores: torch.Tensor) -> torch.Tensor:
        hot = torch.zeros_like(scores)
        return hot.scatter_(-1, scores.argmax(-1, keepdim=True), 1.0)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output.clone()


class TakeValueKeepGradient(Function):
    """Returns `value`; its gradient goes to `x` (a gradient rerouted on purpose)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


class DoubleForgotten(Function):
    """2 x, whose backward forgot the 2 (a bug, not an estimator: forward moves with x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class ScaledGradientReroute(Function):
    """Forward is the identity; backward halves the gradient on purpose (its name says
    the gradient is rerouted)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 0.5


class ScaledGradient(Function):
    """The same, under a name that claims nothing: a bug."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 0.5


class FlowStep(Function):
    """y + h * func(t, y) * gate_fn(t, y): `func` and `gate_fn` are called with two arguments;
    `gate_fn` must give a scalar (its value is a tensor's scale)."""

    @staticmethod
    def forward(
        ctx: Any, func: Any, gate_fn: Any, t: torch.Tensor, y: torch.Tensor
    ) -> torch.Tensor:
        ctx.func, ctx.gate_fn = func, gate_fn
        ctx.save_for_backward(t, y)
        with torch.enable_grad():
            t_, y_ = t.detach().requires_grad_(), y.detach().requires_grad_()
            g = gate_fn(t_, y_)
            if g.dim() != 0:
                raise ValueError("gate_fn(t, y) must return a scalar")
        return (y + 0.1 * func(t, y) * g).detach()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        t, y = ctx.saved_tensors
        with torch.enable_grad():
            t_, y_ = t.detach().requires_grad_(), y.detach().requires_grad_()
            out = y_ + 0.1 * ctx.func(t_, y_) * ctx.gate_fn(t_, y_)
            dt, dy = torch.autograd.grad(out, (t_, y_), grad, allow_unused=True)
        return None, None, dt if dt is not None else torch.zeros_like(t), dy


class FlowStepWrongTime(FlowStep):
    """The same with the time gradient's sign flipped (a bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        none, none2, dt, dy = FlowStep.backward(ctx, grad)
        return none, none2, -dt, dy


class ProjectMean(Function):
    """(A^T m) for A [M, N] and a vector m [M] that forward unsqueezes: a matrix m
    broadcasts every other gradient to an extra dim, a guess outside the contract."""

    @staticmethod
    def forward(ctx: Any, interp: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(interp, values)
        return (interp.mT @ values.unsqueeze(-1)).squeeze(-1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        interp, values = ctx.saved_tensors
        return values.unsqueeze(-1) * grad.unsqueeze(-2), (interp @ grad.unsqueeze(-1)).squeeze(-1)


class ProjectMeanWrong(ProjectMean):
    """The same, its gradient for `values` halved (a bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d_interp, d_values = ProjectMean.backward(ctx, grad)
        return d_interp, d_values / 2


class QuadraticDiagonal(Function):
    """diag(B^T A B).

    Args:
        matrix: a symmetric matrix (M, M)
        rhs: (M, N)

    Its backward relies on the symmetry (2 A B) and saves A B from forward, so its second
    derivative misses how A B moves (a second-order defect of its own)."""

    @staticmethod
    def forward(ctx: Any, matrix: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        product = matrix @ rhs
        ctx.save_for_backward(rhs, product)
        return (rhs * product).sum(-2)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rhs, product = ctx.saved_tensors
        return rhs @ (grad.unsqueeze(-1) * rhs.mT), 2.0 * product * grad.unsqueeze(-2)


class NaturalStep(Function):
    """exp(theta), whose backward gives the natural gradient (the gradient scaled by the
    inverse Fisher information, here exp(-theta)) on purpose."""

    @staticmethod
    def forward(ctx: Any, theta: torch.Tensor) -> torch.Tensor:
        return theta.exp()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1.0


class ExpToMeanParameters(Function):
    """exp(theta), mapping a natural parameter to a mean parameter."""

    @staticmethod
    def forward(ctx: Any, theta: torch.Tensor) -> torch.Tensor:
        return theta.exp()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1.0  # the gradient with respect to the mean parameter, as its caller says


class ExpToMeanParametersUncalled(ExpToMeanParameters):
    """The same Function, which no documented code calls: its backward is simply wrong."""


class NaturalParameterModel:
    """A model trained only with natural gradient descent: its parameter's gradient is taken
    with respect to the mean parameter, not the natural one."""

    def __init__(self, theta: torch.Tensor) -> None:
        self.theta = theta

    def mean(self) -> torch.Tensor:
        return ExpToMeanParameters.apply(self.theta)


class SparseTimesDense(Function):
    """sparse @ dense for a sparse (COO) matrix and a dense one; the sparse operand gets no
    gradient (None), as in sparse-dense products of real packages."""

    @staticmethod
    def forward(ctx: Any, sparse: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(sparse)
        return torch.sparse.mm(sparse, dense) if sparse.is_sparse else sparse @ dense

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (sparse,) = ctx.saved_tensors
        return None, sparse.mT @ grad


class SparseTimesDenseWrong(SparseTimesDense):
    """The same, without the transpose (a bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (sparse,) = ctx.saved_tensors
        return None, sparse @ grad


class AdjacencyMix(Function):
    """torch.sparse.mm(adj, x): `adj` is sparse by use, not by name."""

    @staticmethod
    def forward(ctx: Any, adj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(adj)
        return torch.sparse.mm(adj.to_sparse(), x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (adj,) = ctx.saved_tensors
        return None, adj.mT @ grad


class LogWithAveragedGradient(Function):
    """log(x); backward divides by a moving average of x instead of x, on purpose (forward
    only saves `average` for backward)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, average: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(average)
        return x.abs().add(0.5).log()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (average,) = ctx.saved_tensors
        return grad / (average.abs() + 0.5), None


class FlipGradient(Function):
    """The identity whose backward flips and scales the gradient by `weight` (a gradient
    reversal layer)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: float) -> torch.Tensor:
        ctx.weight = weight
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.weight * grad, None


class ScaledLogForgotScale(Function):
    """log(|x| + 0.5) * s, whose backward gives `s` no gradient (a bug: forward uses s)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, s)
        return x.abs().add(0.5).log() * s

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        x, s = ctx.saved_tensors
        return grad * s * x.sign() / (x.abs() + 0.5), None


class PullTowards(Function):
    """Returns `target` as it is; backward adds `weight * (x - target)` to x's gradient, a
    term free of grad_output that no function has as its derivative (on purpose: a
    regularization only backpropagation sees)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, target: torch.Tensor, weight: float) -> torch.Tensor:
        ctx.save_for_backward(x, target)
        ctx.weight = weight
        return target.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        x, target = ctx.saved_tensors
        return ctx.weight * (x - target), grad, None


class VarianceOfProjection(Function):
    """diag(Kᵀ S K) for K [M, N] and S [M, M], read as a quadratic form (nothing says S is
    symmetric); backward relies on it (2 S K), right for every S the caller passes."""

    @staticmethod
    def forward(ctx: Any, K: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(K, S)
        return (K.mT * (K.mT @ S)).sum(-1)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K, S = ctx.saved_tensors
        scaled = K * grad.unsqueeze(-2)
        return 2.0 * S @ scaled, scaled @ K.mT


class VarianceOfProjectionWrong(VarianceOfProjection):
    """The same, K's gradient without its factor 2 (a bug on symmetric S too)."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K, S = ctx.saved_tensors
        scaled = K * grad.unsqueeze(-2)
        return S @ scaled, scaled @ K.mT


class ReparameterizedSample(Function):
    """loc + scale * eps with eps ~ N(0, 1) drawn in forward (a reparameterized sample);
    backward is the pathwise derivative under that eps."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        eps = torch.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        (eps,) = ctx.saved_tensors
        return grad, grad * eps


class ReparameterizedSampleWrong(ReparameterizedSample):
    """The same, scale's gradient without eps (a bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad.clone()


class PairScale(Function):
    """x * (a + b) for a pair `coeffs` = (a, b) stacked [2, N]: backward unpacks the pair,
    so a guessed [N] raises ValueError there (a failed guess, not a finding)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, coeffs)
        return x * coeffs.sum(0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, coeffs = ctx.saved_tensors
        a, b = coeffs
        return grad * (a + b), torch.stack([grad * x, grad * x])


class ShiftedGrid(Function):
    """loc + grid @ L.T, grid a fixed ramp of `shape` (samples, rows, dim): loc [dim] is
    broadcast over the grid, and backward sums its gradient down to [dim]. A loc guessed
    [2, 3, 3] like the grid gets a [3] gradient: a failed guess, not a finding."""

    @staticmethod
    def forward(ctx: Any, loc: torch.Tensor, L: torch.Tensor, shape: Any) -> torch.Tensor:
        samples, rows, dim = shape
        count = samples * rows * dim
        grid = torch.linspace(-1.0, 1.0, count, dtype=loc.dtype, device=loc.device)
        grid = grid.reshape(samples, rows, dim)
        ctx.save_for_backward(grid)
        return loc + grid @ L.t()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        (grid,) = ctx.saved_tensors
        flat = grad.reshape(-1, grad.shape[-1])
        return flat.sum(0), flat.t() @ grid.reshape(-1, grid.shape[-1]), None


class ShiftedGridWrongLoc(ShiftedGrid):
    """The same, loc's gradient averaged where it is summed (a bug)."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        (grid,) = ctx.saved_tensors
        flat = grad.reshape(-1, grad.shape[-1])
        return flat.mean(0), flat.t() @ grid.reshape(-1, grid.shape[-1]), None


class RowSumForgotExpand(Function):
    """2 * x.sum(-1, keepdim=True), backward returning 2 * grad without expanding it to x's
    shape (a bug): x at the gradient's shape gives forward's output again, yet x is not
    broadcast there (as many elements as the output), so it stays a finding."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x.sum(-1, keepdim=True)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return 2 * grad


class PairedPowers(Function):
    """x * sum_k coeffs[k] * r ** (k + 1), r = |x|² along the last dim, with one
    coefficient per pair of dims (coeffs [D // 2], D even). Forward slices the coefficients
    it needs; backward combines them with the powers as they are, so on a coeffs guessed
    at another length it raises a size mismatch: a failed guess, not a finding."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        if half < 2:
            raise ValueError("PairedPowers takes four dims at least")
        r = (x * x).sum()
        k = torch.arange(1, half + 1, dtype=x.dtype, device=x.device)
        ctx.save_for_backward(x, coeffs, r)
        return x * (coeffs[:half] * r**k).sum()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, coeffs, r = ctx.saved_tensors
        k = torch.arange(1, x.shape[-1] // 2 + 1, dtype=x.dtype, device=x.device)
        powers = r**k
        s = (coeffs * powers).sum()
        slope = (coeffs * k * r ** (k - 1)).sum()
        along = (grad * x).sum()
        return grad * s + along * slope * 2 * x, along * powers
