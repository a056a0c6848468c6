"""What the unreduced-gradient warning says about torch, measured on a real Function.

`checks/backward/unreduced.py` tells the user that every path through autograd sums a broadcast
gradient back, and only a direct call of backward sees it unreduced. Each path is run here
on BiasAddUnreduced (b's gradient returned as [3, 4] for a [4] bias): if a torch release
changes any of them, this fails and the warning's words must change with it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from gradverify.checks.backward.unreduced import PATHS
from tests.functions.structure_hints import BiasAddUnreduced

X = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
B = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
WEIGHTS = torch.arange(12, dtype=torch.float64).reshape(3, 4)
EXPECTED = WEIGHTS.sum(0)  # d/db of Σ weights · (x + b)


def loss(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (BiasAddUnreduced.apply(x, b) * WEIGHTS).sum()


def leaves() -> tuple[torch.Tensor, torch.Tensor]:
    return X.clone().requires_grad_(), B.clone().requires_grad_()


def by_grad() -> torch.Tensor:
    x, b = leaves()
    return torch.autograd.grad(loss(x, b), b)[0]


def by_backward() -> torch.Tensor:
    x, b = leaves()
    loss(x, b).backward()
    assert b.grad is not None
    return b.grad


def by_double_backward() -> torch.Tensor:
    # Σ y² (y = x + b): b's gradient 2·Σ_rows y depends on b, so it has a gradient of its own.
    x, b = leaves()
    squares = (BiasAddUnreduced.apply(x, b) ** 2).sum()
    (grad,) = torch.autograd.grad(squares, b, create_graph=True)
    assert grad.shape == B.shape and torch.allclose(grad, 2 * (X + B).sum(0))
    (second,) = torch.autograd.grad(grad.sum(), b)
    assert second.shape == B.shape and torch.allclose(second, torch.full_like(B, 6.0))
    return torch.autograd.grad(loss(x, b), b, create_graph=True)[0]


def by_func_grad() -> torch.Tensor:
    return torch.func.grad(lambda b: loss(X, b))(B)


def by_func_vjp() -> torch.Tensor:
    _, pullback = torch.func.vjp(lambda b: BiasAddUnreduced.apply(X, b), B)
    return pullback(WEIGHTS)[0]


def by_func_jacrev() -> torch.Tensor:
    jacobian = torch.func.jacrev(lambda b: BiasAddUnreduced.apply(X, b))(B)  # [3, 4, 4]
    return torch.einsum("ij,ijk->k", WEIGHTS, jacobian)


def by_vmap() -> torch.Tensor:
    batch = torch.stack([X, X])
    grads = torch.func.vmap(lambda x: torch.func.grad(lambda b: loss(x, b))(B))(batch)
    assert torch.equal(grads[0], grads[1])
    return grads[0]


def by_compile() -> torch.Tensor:
    x, b = leaves()
    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    return torch.autograd.grad(compiled(x, b), b)[0]


def by_checkpoint() -> torch.Tensor:
    x, b = leaves()
    value = checkpoint(loss, x, b, use_reentrant=False)
    return torch.autograd.grad(value, b)[0]


PATHS_THROUGH_AUTOGRAD = (by_grad, by_backward, by_double_backward, by_func_grad)
PATHS_THROUGH_AUTOGRAD += (by_func_vjp, by_func_jacrev, by_vmap, by_compile, by_checkpoint)


@pytest.mark.parametrize("path", PATHS_THROUGH_AUTOGRAD, ids=lambda path: path.__name__)
def test_every_path_through_autograd_delivers_the_reduced_gradient(
    path: Callable[[], torch.Tensor],
) -> None:
    delivered = path()
    assert delivered.shape == B.shape
    assert torch.allclose(delivered, EXPECTED)


def test_only_a_direct_call_of_backward_sees_the_unreduced_gradient() -> None:
    _, grad_b = BiasAddUnreduced.backward(None, WEIGHTS)
    assert grad_b.shape == (3, 4)
    assert "only code that calls backward itself" in PATHS
