"""Judge the custom autograd Function of sparsemax 0.1.9 with plain gradcheck/gradgradcheck."""

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


from sparsemax.sparsemax import SparsemaxFunction  # noqa: E402

# Sparsemax(dim) applies SparsemaxFunction.apply(input, dim): 2-D logits, and 3-D with another dim.
X = (torch.randn(3, 6, dtype=D) * 2).requires_grad_()
X3 = (torch.randn(2, 5, 3, dtype=D) * 2).requires_grad_()

judge("SparsemaxFunction dim=-1", lambda x: SparsemaxFunction.apply(x, -1), (X,))
judge("SparsemaxFunction 3-D dim=1", lambda x: SparsemaxFunction.apply(x, 1), (X3,))
