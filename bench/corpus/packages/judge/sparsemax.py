"""Judge the custom autograd Function of sparsemax 0.1.9 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from sparsemax.sparsemax import SparsemaxFunction

# Sparsemax(dim) applies SparsemaxFunction.apply(input, dim): 2-D logits, and 3-D with another dim.
X = (torch.randn(3, 6, dtype=D) * 2).requires_grad_()
X3 = (torch.randn(2, 5, 3, dtype=D) * 2).requires_grad_()

judge("SparsemaxFunction dim=-1", lambda x: SparsemaxFunction.apply(x, -1), (X,))
judge("SparsemaxFunction 3-D dim=1", lambda x: SparsemaxFunction.apply(x, 1), (X3,))
