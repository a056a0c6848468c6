"""Functions whose docstrings (and call sites) say what their inputs are, the way real
packages write them: numpy-style `x : (N, C) tensor`, google-style `x (Tensor): shape (N,)`,
`(2,)` and `()` for a vector and a scalar, `in [0, n)` for a range of values, `constant`
or a registered buffer for a tensor that gets no gradient, `straight-through estimator` for a
backward that is not the derivative on purpose. Each correct twin passes zero-config; each
buggy twin fails (tests/inference/test_docstrings.py)."""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class DistanceToSphere(Function):
    """Signed distance of points to a sphere.

    Args:
        points: (N, 3) query points
        centre: (3,) the sphere's centre
        radius: () its radius, a 0-d tensor
    """

    @staticmethod
    def forward(ctx: Any, points, centre, radius) -> Any:
        offset = points - centre
        length = offset.norm(dim=-1)
        ctx.save_for_backward(offset, length)
        return length - radius

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        offset, length = ctx.saved_tensors
        towards = grad.unsqueeze(-1) * offset / length.unsqueeze(-1)
        return towards, -towards.sum(0), -grad.sum()


class DistanceToSphereCentreSign(DistanceToSphere):
    """The centre's gradient with its sign flipped."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        offset, length = ctx.saved_tensors
        towards = grad.unsqueeze(-1) * offset / length.unsqueeze(-1)
        return towards, towards.sum(0), -grad.sum()


class DistanceToSphereUndocumented(Function):
    """DistanceToSphere with no word on its inputs: a number for `centre` or `radius`,
    whose gradient backward returns as a tensor, is a failed guess."""

    @staticmethod
    def forward(ctx: Any, points, centre, radius) -> Any:
        offset = points - centre
        length = offset.norm(dim=-1)
        ctx.save_for_backward(offset, length)
        return length - radius

    backward = DistanceToSphere.backward


class PickedNLL(Function):
    """Mean negative log-likelihood of the picked class (numpy-style docstring).

    Parameters
    ----------
    scores : (N, C) tensor
        unnormalised class scores
    labels : (N,) int64 tensor
        the class of each row, in [0, C)
    """

    @staticmethod
    def forward(ctx: Any, scores, labels) -> torch.Tensor:
        log_probs = scores.log_softmax(-1)
        picked = log_probs.gather(1, labels.unsqueeze(1)).squeeze(1)
        ctx.save_for_backward(log_probs, labels)
        return -picked.mean()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        log_probs, labels = ctx.saved_tensors
        one_hot = torch.zeros_like(log_probs).scatter_(1, labels.unsqueeze(1), 1.0)
        return grad * (log_probs.exp() - one_hot) / log_probs.shape[0], None


class PickedNLLForgotMean(PickedNLL):
    """The gradient of the sum, where the mean is returned (the 1/N forgotten)."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        log_probs, labels = ctx.saved_tensors
        one_hot = torch.zeros_like(log_probs).scatter_(1, labels.unsqueeze(1), 1.0)
        return grad * (log_probs.exp() - one_hot), None


class PickedScore(Function):
    """The score of each row's class (google-style docstring).

    Args:
        scores (Tensor): shape (B, K), one row per item
        labels (Tensor): shape (B,), the class of each row
    """

    @staticmethod
    def forward(ctx: Any, scores, labels) -> torch.Tensor:
        ctx.save_for_backward(labels)
        ctx.shape = scores.shape
        return scores.gather(1, labels.unsqueeze(1)).squeeze(1)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        (labels,) = ctx.saved_tensors
        full = grad.new_zeros(ctx.shape)
        return full.scatter(1, labels.unsqueeze(1), grad.unsqueeze(1)), None


class PickedScoreUndocumented(Function):
    """PickedScore with no docstring of its inputs: labels gathered along dim 1 of scores
    are as long as scores' dim 0 (gather's index shape rules)."""

    forward = PickedScore.forward
    backward = PickedScore.backward


class PickedScoreWrongRow(PickedScoreUndocumented):
    """Every row's gradient written into the first row."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        (labels,) = ctx.saved_tensors
        full = grad.new_zeros(ctx.shape)
        full[0].index_add_(0, labels, grad)
        return full, None


class FixedSmoothing(Function):
    """Depthwise smoothing of signals with a fixed filter.

    x: (B, C, L) signals
    kernel: (K,) constant filter weights, K odd; receives no gradient
    """

    @staticmethod
    def forward(ctx: Any, x, kernel) -> torch.Tensor:
        assert kernel.numel() % 2 == 1, "an odd filter keeps the length"
        channels = x.shape[1]
        weight = kernel.reshape(1, 1, -1).expand(channels, 1, -1).contiguous()
        ctx.save_for_backward(weight)
        return F.conv1d(x, weight, padding=kernel.numel() // 2, groups=channels)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        (weight,) = ctx.saved_tensors
        padding, channels = weight.shape[-1] // 2, weight.shape[0]
        return F.conv_transpose1d(grad, weight, padding=padding, groups=channels), None


class FixedSmoothingUnflipped(FixedSmoothing):
    """A correlation where backward needs a convolution: right only for a symmetric filter."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None]:
        (weight,) = ctx.saved_tensors
        padding, channels = weight.shape[-1] // 2, weight.shape[0]
        return F.conv1d(grad, weight, padding=padding, groups=channels), None


class BufferedSmoothing(Function):
    """FixedSmoothing whose docstring gives shapes only; its one call site
    (`Smoother.forward` below) passes a registered buffer.

    x: (B, C, L) signals
    kernel: (K,) K odd
    """

    forward = FixedSmoothing.forward
    backward = FixedSmoothing.backward


class Smoother(torch.nn.Module):
    """The module that calls BufferedSmoothing with its constant buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("taps", torch.tensor([0.25, 0.5, 0.25]))

    def forward(self, x) -> torch.Tensor:
        return BufferedSmoothing.apply(x, self.taps)  # type: ignore[no-any-return]


def _segment_mean(ctx: Any, values, ids, n_segments) -> Any:
    total = values.new_zeros((n_segments, values.shape[1]))
    total.index_add_(0, ids, values)
    counts = torch.bincount(ids, minlength=n_segments).clamp(min=1)
    ctx.save_for_backward(ids, counts)
    return total / counts.unsqueeze(1).to(values.dtype)


class SegmentAverage(Function):
    """Mean of the rows of values in each segment.

    values: the rows
    ids: segment of each row, in [0, n_segments)
    n_segments: how many segments, an int
    """

    forward = staticmethod(_segment_mean)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None, None]:
        ids, counts = ctx.saved_tensors
        return grad[ids] / counts[ids].unsqueeze(1).to(grad.dtype), None, None


class SegmentAverageForgotCount(SegmentAverage):
    """The gradient of the sum, where the mean is returned (1/count forgotten)."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, None, None]:
        ids, _ = ctx.saved_tensors
        return grad[ids], None, None


class StraightThroughSign(Function):
    """sign(x), with a straight-through estimator on purpose: backward passes the
    gradient through where |x| <= 1, not the true derivative (zero)."""

    @staticmethod
    def forward(ctx: Any, x) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype)


class StraightThroughSignSummed(StraightThroughSign):
    """A gradient summed to one number: a bug no surrogate declares (its shape is wrong)."""

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (grad * (x.abs() <= 1).to(grad.dtype)).sum()


class SurrogateLossScale(Function):
    """3 x, the scale of a surrogate loss: the words `surrogate loss` declare nothing of
    the gradient, which is exact."""

    @staticmethod
    def forward(ctx: Any, x) -> torch.Tensor:
        return 3 * x

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return 3 * grad


class NoisyTranspose(Function):
    """x.T of a matrix; forward warns where x is not one, as torch's `x.T` did."""

    @staticmethod
    def forward(ctx: Any, x) -> torch.Tensor:
        if x.dim() != 2:
            warnings.warn("NoisyTranspose expects a matrix", UserWarning, stacklevel=2)
        return x.transpose(0, -1) if x.dim() else x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.transpose(0, -1) if grad.dim() else grad.clone()


class PickedNLLScoresOnly(Function):
    """PickedNLL whose docstring gives the scores' shape only.

    scores : (N, C) tensor
    """

    forward = PickedNLL.forward
    backward = PickedNLL.backward


class PickedNLLScoresOnlyForgotMean(PickedNLLScoresOnly):
    """The 1/N forgotten."""

    backward = PickedNLLForgotMean.backward


def gathers_by_torch(ctx: Any, values, picks):
    """torch.gather(values, -1, picks[..., None]): picks as values without its last dim."""
    return torch.gather(values, -1, picks[..., None]).squeeze(-1)


def takes_along(ctx: Any, values, picks):
    """torch.take_along_dim(values, picks, 0): picks as values."""
    return torch.take_along_dim(values, picks, 0)
