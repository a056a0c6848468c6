"""entmax through its public API: a small classifier head trained one step with each mapping and loss."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import entmax  # noqa: E402
import torch  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
head = torch.nn.Linear(8, 6)
x = torch.randn(4, 8)
target = torch.tensor([0, 2, 5, 1])
alpha = torch.nn.Parameter(torch.full((4, 1), 1.5))

mappings = [
    entmax.Sparsemax(dim=-1),
    lambda z: entmax.sparsemax(z, dim=-1, k=2),
    entmax.Entmax15(dim=-1),
    lambda z: entmax.entmax_bisect(z, alpha=alpha, dim=-1),
    entmax.SparsemaxBisect(dim=-1, n_iter=50),
    entmax.NormmaxBisect(alpha=2, dim=-1),
    entmax.BudgetBisect(budget=2, dim=-1),
]
for mapping in mappings:
    p = mapping(head(x))
    (p * torch.randn_like(p)).sum().backward()
losses = [
    entmax.SparsemaxLoss(),
    entmax.SparsemaxBisectLoss(),
    entmax.Entmax15Loss(),
    entmax.EntmaxBisectLoss(alpha=1.5),
    entmax.NormmaxBisectLoss(alpha=2),
]
for loss_fn in losses:
    loss_fn(head(x), target).backward()
print("entmax usage ok")
