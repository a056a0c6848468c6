"""Judge the custom autograd Functions of qpth 0.0.18 with plain gradcheck."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
D = torch.float64


def judge(name, fn, inputs, second=True, **kw):
    """Print plain gradcheck (and gradgradcheck) verdicts for fn on inputs, float64."""
    checks = [("gradcheck", gradcheck)] + ([("gradgradcheck", gradgradcheck)] if second else [])
    for label, check in checks:
        try:
            check(fn, inputs, **kw)
            msg = "pass"
        except Exception as e:  # the verdict is the output
            first = (str(e).strip().splitlines() or [""])[0]
            msg = f"FAIL ({type(e).__name__}: {first[:160]})"
        print(f"{name}: {label} {msg}", flush=True)


from qpth.qp import QPFunction  # noqa: E402

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
