"""POT through its public API: emd2 (exact OT cost) and the Bures-Wasserstein distance, with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import ot  # noqa: E402
import torch  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
xs = torch.randn(6, 2, requires_grad=True)
xt = torch.randn(5, 2) + 1.0
a, b = ot.unif(6, type_as=xs), ot.unif(5, type_as=xs)
M = ot.dist(xs, xt)
ot.emd2(a, b, M).backward()
# sqrtm through TorchBackend.MatrixSqrtFunction, as the Gaussian OT code uses it.
L = torch.randn(3, 3)
S = (L @ L.T + 0.5 * torch.eye(3)).requires_grad_()
nx = ot.backend.get_backend(S)
nx.sqrtm(S).trace().backward()
print("ot usage ok")
