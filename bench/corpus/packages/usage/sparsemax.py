"""sparsemax through its public API: the Sparsemax layer in a small attention step."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from sparsemax import Sparsemax  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
proj = torch.nn.Linear(8, 8)
q, k = torch.randn(2, 5, 8), torch.randn(2, 7, 8)
scores = proj(q) @ k.transpose(1, 2) / 8**0.5
attn = Sparsemax(dim=-1)(scores)
attn.pow(2).sum().backward()
logits = torch.nn.Linear(8, 4)(torch.randn(3, 8))
Sparsemax(dim=1)(logits)[:, 0].sum().backward()
print("sparsemax usage ok")
