"""roma through its public API: procrustes (SVD and Horn paths, with regularization) with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import roma  # noqa: E402
import torch  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
M = torch.randn(4, 3, 3, requires_grad=True)
R_target = roma.random_rotmat(4)
# special_procrustes on 3x3: the Horn closed form (_HornEigenvectorManualDerivatives).
R = roma.special_procrustes(M)
(R - R_target).pow(2).sum().backward()
# procrustes with the SVD path and the gradient-only regularization term.
M4 = torch.randn(2, 4, 4, requires_grad=True)
R4 = roma.procrustes(M4, force_rotation=True, regularization=0.1, method="svd")
R4.sum().backward()
R4, s = roma.procrustes(M4, return_singular_values=True)
(R4.sum() + s.sum()).backward()
q = roma.special_procrustes_unitquat(torch.randn(3, 3, 3, requires_grad=True))
q.sum().backward()
print("roma usage ok")
