"""diffsort through its public API: a DiffSortNet with the gaussian relaxation, with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from diffsort import DiffSortNet  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(3, 8, requires_grad=True)
sorter = DiffSortNet("bitonic", 8, steepness=10, distribution="gaussian")
sorted_x, perm = sorter(x)
(perm.pow(2).sum() + sorted_x.sum()).backward()
print("diffsort usage ok")
