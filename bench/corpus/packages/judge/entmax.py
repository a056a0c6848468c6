"""Judge every custom autograd Function of entmax 1.3 with plain gradcheck/gradgradcheck."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
D = torch.float64


def judge(name, fn, inputs, second=True, **kw):
    """Print plain gradcheck (and gradgradcheck) verdicts for fn on inputs, float64."""
    checks = [("gradcheck", gradcheck)] + ([("gradgradcheck", gradgradcheck)] if second else [])
    for label, check in checks:
        try:
            check(fn, inputs, **kw)
            msg = "pass"
        except Exception as e:  # the verdict is the output
            first = (str(e).strip().splitlines() or [""])[0]
            msg = f"FAIL ({type(e).__name__}: {first[:160]})"
        print(f"{name}: {label} {msg}", flush=True)


from entmax.activations import Entmax15Function, SparsemaxFunction  # noqa: E402
from entmax.losses import (  # noqa: E402
    Entmax15LossFunction,
    EntmaxBisectLossFunction,
    NormmaxBisectLossFunction,
    SparsemaxBisectLossFunction,
    SparsemaxLossFunction,
)
from entmax.root_finding import (  # noqa: E402
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
