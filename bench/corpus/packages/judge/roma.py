"""Judge every custom autograd Function of roma 1.8.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import roma
import torch
from roma.mappings import (
    _HornEigenvectorManualDerivatives,
    _ProcrustesManualDerivatives,
    _ProcrustesRegularization,
)

# procrustes() flattens to a (B, D, D) batch; well-separated singular values (the solution is unique).
M3 = (torch.randn(2, 3, 3, dtype=D) + 2 * torch.eye(3, dtype=D)).requires_grad_()
M4 = (torch.randn(2, 4, 4, dtype=D) + 2 * torch.eye(4, dtype=D)).requires_grad_()

for force in (False, True):
    judge(
        f"_ProcrustesManualDerivatives force_rotation={force} (R, DS)",
        lambda m, f=force: _ProcrustesManualDerivatives.apply(m, f, 1e-5)[:2],
        (M4,),
    )
judge(
    "_HornEigenvectorManualDerivatives",
    lambda m: _HornEigenvectorManualDerivatives.apply(m, 2e-5),
    (M3,),
)
R = roma.procrustes(M3.detach()).requires_grad_()
judge(
    "_ProcrustesRegularization regularization=0",
    lambda m, r: _ProcrustesRegularization.apply(m, r, 0.0),
    (M3, R),
)
judge(
    "_ProcrustesRegularization regularization=0.1 (documented gradient-only term)",
    lambda m, r: _ProcrustesRegularization.apply(m, r, 0.1),
    (M3, R),
    second=False,
)
