"""Judge every custom autograd Function of roma 1.8.0 with plain gradcheck/gradgradcheck."""

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


import roma  # noqa: E402
from roma.mappings import (  # noqa: E402
    _HornEigenvectorManualDerivatives,
    _ProcrustesManualDerivatives,
    _ProcrustesRegularization,
)

# procrustes() flattens to a (B, D, D) batch; well-separated singular values (the solution is unique).
M3 = (torch.randn(2, 3, 3, dtype=D) + 2 * torch.eye(3, dtype=D)).requires_grad_()
M4 = (torch.randn(2, 4, 4, dtype=D) + 2 * torch.eye(4, dtype=D)).requires_grad_()

for force in (False, True):
    judge(
        f"_ProcrustesManualDerivatives force_rotation={force} (R, DS)",
        lambda m, f=force: _ProcrustesManualDerivatives.apply(m, f, 1e-5)[:2],
        (M4,),
    )
judge(
    "_HornEigenvectorManualDerivatives",
    lambda m: _HornEigenvectorManualDerivatives.apply(m, 2e-5),
    (M3,),
)
R = roma.procrustes(M3.detach()).requires_grad_()
judge(
    "_ProcrustesRegularization regularization=0",
    lambda m, r: _ProcrustesRegularization.apply(m, r, 0.0),
    (M3, R),
)
judge(
    "_ProcrustesRegularization regularization=0.1 (documented gradient-only term)",
    lambda m, r: _ProcrustesRegularization.apply(m, r, 0.1),
    (M3, R),
    second=False,
)
