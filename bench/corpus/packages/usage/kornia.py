"""kornia through its public API: focal_loss on CPU logits large enough for its fused path, and find_essential."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import kornia  # noqa: E402
import torch  # noqa: E402
from kornia.geometry.epipolar import find_essential  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
# _TargetLogSoftmax runs for CPU logits of at least 2**19 elements.
logits = torch.randn(2, 4, 256, 256, requires_grad=True)
labels = torch.randint(0, 4, (2, 256, 256))
kornia.losses.focal_loss(logits, labels, alpha=0.25, gamma=2.0, reduction="mean").backward()
# find_essential with 5 < N < 9 points takes the least-squares null space (_NullSpaceBasis).
p1 = torch.rand(2, 7, 2, requires_grad=True)
p2 = torch.rand(2, 7, 2)
E = find_essential(p1, p2)
torch.nan_to_num(E).abs().sum().backward()
print("kornia usage ok")
