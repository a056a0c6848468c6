"""kymatio through its public API: a 1-D scattering transform (torch frontend) with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from kymatio.torch import Scattering1D  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(2, 256, requires_grad=True)
Sx = Scattering1D(J=4, shape=256, Q=4)(x)
Sx.mean().backward()
print("kymatio usage ok")
