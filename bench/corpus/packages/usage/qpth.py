"""qpth through its public API: an OptNet-style QP layer (shared Q, G, h; batched p) with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from qpth.qp import QPFunction  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
nz, nineq, nbatch = 4, 6, 3
L = torch.nn.Parameter(torch.tril(torch.rand(nz, nz)) + torch.eye(nz))
G = torch.nn.Parameter(torch.randn(nineq, nz))
h = torch.nn.Parameter(torch.rand(nineq) + 0.5)
e = torch.empty(0)
fc = torch.nn.Linear(5, nz)
Q = L @ L.T + 0.1 * torch.eye(nz)
z = QPFunction(verbose=-1)(Q, fc(torch.randn(nbatch, 5)), G, h, e, e)
z.pow(2).sum().backward()
print("qpth usage ok")
