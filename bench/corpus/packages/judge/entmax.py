"""Judge every custom autograd Function of entmax 1.3 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from entmax.activations import Entmax15Function, SparsemaxFunction
from entmax.losses import (
    Entmax15LossFunction,
    EntmaxBisectLossFunction,
    NormmaxBisectLossFunction,
    SparsemaxBisectLossFunction,
    SparsemaxLossFunction,
)
from entmax.root_finding import (
    BudgetBisectFunction,
    EntmaxBisectFunction,
    NormmaxBisectFunction,
    SparsemaxBisectFunction,
)

# Logits as a classifier produces them: (batch, classes), distinct values, normalised on dim -1.
X = (torch.randn(3, 6, dtype=D) * 2).requires_grad_()
target = torch.tensor([0, 3, 5])
alpha = torch.full((3, 1), 1.5, dtype=D, requires_grad=True)

judge("SparsemaxFunction", lambda x: SparsemaxFunction.apply(x, -1, None), (X,))
judge("SparsemaxFunction k=2", lambda x: SparsemaxFunction.apply(x, -1, 2), (X,))
judge("Entmax15Function", lambda x: Entmax15Function.apply(x, -1, None), (X,))
judge(
    "EntmaxBisectFunction (X, alpha)",
    lambda x, a: EntmaxBisectFunction.apply(x, a, -1, 50, True),
    (X, alpha),
)
judge("SparsemaxBisectFunction", lambda x: SparsemaxBisectFunction.apply(x, -1, 50, True), (X,))
judge("NormmaxBisectFunction", lambda x: NormmaxBisectFunction.apply(x, 2.0, -1, 50), (X,))
judge("BudgetBisectFunction", lambda x: BudgetBisectFunction.apply(x, 2.0, -1, 50), (X,))
judge("SparsemaxLossFunction", lambda x: SparsemaxLossFunction.apply(x, target, None), (X,))
judge(
    "SparsemaxBisectLossFunction", lambda x: SparsemaxBisectLossFunction.apply(x, target, 50), (X,)
)
judge("Entmax15LossFunction", lambda x: Entmax15LossFunction.apply(x, target, None), (X,))
judge(
    "EntmaxBisectLossFunction", lambda x: EntmaxBisectLossFunction.apply(x, target, 1.5, 50), (X,)
)
judge(
    "NormmaxBisectLossFunction", lambda x: NormmaxBisectLossFunction.apply(x, target, 2.0, 50), (X,)
)
