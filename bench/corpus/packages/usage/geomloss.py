"""geomloss through its public API: SamplesLoss with a kernel (MMD) loss, with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from geomloss import SamplesLoss  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(50, 2, requires_grad=True)
y = torch.randn(60, 2) + 1.0
for name in ("gaussian", "energy"):
    SamplesLoss(name, blur=0.5, backend="tensorized")(x, y).backward()
print("geomloss usage ok")
