"""Judge the custom autograd Functions of qpth 0.0.18 with plain gradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from qpth.qp import QPFunction

# OptNet's use: Q = L L^T + eps I (symmetric positive definite), inequality constraints Gz <= h
# with a strictly feasible interior, no equality constraints (an empty tensor).
nz, nineq = 3, 4
Lq = torch.randn(nz, nz, dtype=D, requires_grad=True)
G = torch.randn(nineq, nz, dtype=D, requires_grad=True)
h = (torch.rand(nineq, dtype=D) + 0.2).requires_grad_()
e = torch.empty(0, dtype=D)


def qp(lq, p, g, hh):
    Q = lq @ lq.T + 0.1 * torch.eye(nz, dtype=D)
    return QPFunction(verbose=-1)(Q, p, g, hh, e, e)


p1 = torch.randn(1, nz, dtype=D, requires_grad=True)
judge("QPFunctionFn nBatch=1", qp, (Lq, p1, G, h), second=False)
# The docstring: coefficients shared by the whole batch need no batch dimension.
p2 = torch.randn(2, nz, dtype=D, requires_grad=True)
judge("QPFunctionFn nBatch=2, Q/G/h shared", qp, (Lq, p2, G, h), second=False)
Qb = (Lq @ Lq.T + 0.1 * torch.eye(nz, dtype=D)).detach().expand(2, nz, nz).clone()
judge(
    "QPFunctionFn nBatch=2, only p (batched) differentiated",
    lambda p: QPFunction(verbose=-1)(Qb, p, G.detach(), h.detach(), e, e),
    (p2,),
    second=False,
)
judge(
    "QPFunctionFn nBatch=2, shared h differentiated",
    lambda hh: QPFunction(verbose=-1)(Qb, p2.detach(), G.detach(), hh, e, e),
    (h,),
    second=False,
)
