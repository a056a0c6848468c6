"""Functions whose bugs need shapes inference must reach (issue 23): a bilinear lookup
into a rank-3 grid, and a pairwise distance whose bug shows only when its two point sets
differ in size. Each buggy one has a correct twin that must pass."""

from __future__ import annotations

from typing import Any

import torch


def _corners(grid: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The cell of each point (x, y) ([-1, 1] across the grid's width and height): its
    corner indices and the point's offsets inside it."""
    height, width = grid.shape[0], grid.shape[1]
    column = ((x + 1) / 2 * (width - 1)).clamp(0, width - 1)
    row = ((y + 1) / 2 * (height - 1)).clamp(0, height - 1)
    left = column.floor().clamp(max=width - 2).long()
    top = row.floor().clamp(max=height - 2).long()
    return left, top, column - left, row - top


class BilinearLookup(torch.autograd.Function):
    """A grid of values (H rows, W columns, C channels) sampled bilinearly at N points,
    each an x and a y in [-1, 1]: C values per point."""

    @staticmethod
    def forward(ctx: Any, grid: torch.Tensor, xy: torch.Tensor) -> torch.Tensor:
        left, top, dx, dy = _corners(grid, xy[:, 0], xy[:, 1])
        ctx.save_for_backward(grid, xy)
        a, b = grid[top, left], grid[top, left + 1]
        c, d = grid[top + 1, left], grid[top + 1, left + 1]
        dx, dy = dx[:, None], dy[:, None]
        return (1 - dy) * ((1 - dx) * a + dx * b) + dy * ((1 - dx) * c + dx * d)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, Any]:
        grid, xy = ctx.saved_tensors
        height, width = grid.shape[0], grid.shape[1]
        left, top, dx, dy = _corners(grid, xy[:, 0], xy[:, 1])
        a, b = grid[top, left], grid[top, left + 1]
        c, d = grid[top + 1, left], grid[top + 1, left + 1]
        wx, wy = dx[:, None], dy[:, None]
        grad_grid = grad_xy = None
        if ctx.needs_input_grad[0]:
            flat = grid.new_zeros((height * width, grid.shape[2]))
            for row, column, weight in (
                (top, left, (1 - wy) * (1 - wx)),
                (top, left + 1, (1 - wy) * wx),
                (top + 1, left, wy * (1 - wx)),
                (top + 1, left + 1, wy * wx),
            ):
                flat.index_add_(0, row * width + column, weight * g)
            grad_grid = flat.reshape(grid.shape)
        if not ctx.needs_input_grad[1]:
            return grad_grid, None
        inside_x = ((xy[:, 0] > -1) & (xy[:, 0] < 1)).to(g.dtype)
        inside_y = ((xy[:, 1] > -1) & (xy[:, 1] < 1)).to(g.dtype)
        d_dx = ((1 - wy) * (b - a) + wy * (d - c)) * g
        d_dy = ((1 - wx) * (c - a) + wx * (d - b)) * g
        grad_xy = torch.stack(
            [
                d_dx.sum(-1) * (width - 1) / 2 * inside_x,
                d_dy.sum(-1) * (height - 1) / 2 * inside_y,
            ],
            dim=-1,
        )
        return grad_grid, grad_xy


class BilinearLookupSwapsAxes(BilinearLookup):
    """BilinearLookup whose backward scales each coordinate's gradient by the other axis's size."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, Any]:
        grad_grid, grad_xy = BilinearLookup.backward(ctx, g)
        grid, _ = ctx.saved_tensors
        height, width = grid.shape[0], grid.shape[1]
        if grad_xy is None:
            return grad_grid, None
        swapped = grad_xy * grad_xy.new_tensor(
            [(height - 1) / (width - 1), (width - 1) / (height - 1)]
        )
        return grad_grid, swapped


class MeanSquaredDistance(torch.autograd.Function):
    """For each point of x, the mean squared distance to the points of y (both sets of points
    in D dimensions)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, y)
        return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).mean(1)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, Any]:
        x, y = ctx.saved_tensors
        grad_x = 2 * g[:, None] * (x - y.mean(0)) if ctx.needs_input_grad[0] else None
        grad_y = 2 * (g.sum() * y - g @ x) / y.shape[0] if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


class MeanSquaredDistanceCountsX(MeanSquaredDistance):
    """MeanSquaredDistance whose gradient for y divides by N, x's count, where M belongs:
    right whenever N = M."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = ctx.saved_tensors
        grad_x = 2 * g[:, None] * (x - y.mean(0))
        grad_y = 2 * (g.sum() * y - g @ x) / x.shape[0]
        return grad_x, grad_y


class Trace(torch.autograd.Function):
    """The trace of a square matrix, or of each of a batch of them."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> torch.Tensor:
        if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
            raise ValueError("Trace takes square matrices")
        ctx.save_for_backward(a)
        return a.diagonal(dim1=-2, dim2=-1).sum(-1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (a,) = ctx.saved_tensors
        eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        return grad[..., None, None] * eye


class TraceSumsTheBatch(Trace):
    """Trace whose backward takes grad for a number: each matrix of a batch gets the sum of
    every matrix's gradient. Right for one matrix."""

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (a,) = ctx.saved_tensors
        eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        return (grad.sum() * eye).expand_as(a)


class PolarRadius(torch.autograd.Function):
    """The distance from the origin of each point (x, y) of points [..., 2], unbound."""

    @staticmethod
    def forward(ctx: Any, points: torch.Tensor) -> torch.Tensor:
        x, y = points.unbind(-1)
        ctx.save_for_backward(points)
        return (x * x + y * y + 1.0).sqrt()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (points,) = ctx.saved_tensors
        radius = (points.pow(2).sum(-1, keepdim=True) + 1.0).sqrt()
        return grad[..., None] * points / radius
