"""Judge the two custom autograd Functions of kornia 0.9.0 with plain gradcheck/gradgradcheck."""

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


from kornia.geometry.epipolar.essential import _NullSpaceBasis  # noqa: E402
from kornia.losses.focal import _TargetLogSoftmax  # noqa: E402

# focal_loss: pred (B, C, *) logits, target (B, 1, *) int64 class indices, valid an optional bool mask.
pred = torch.randn(2, 4, 3, dtype=D, requires_grad=True)
target = torch.randint(0, 4, (2, 1, 3))
valid = torch.rand(2, 4, 3) > 0.3
judge("_TargetLogSoftmax valid=None", lambda p: _TargetLogSoftmax.apply(p, target, None), (pred,))
judge("_TargetLogSoftmax valid=mask", lambda p: _TargetLogSoftmax.apply(p, target, valid), (pred,))

# _least_squares_basis: epipolar design rows (B, N, 9) with 5 < N < 9.
X = torch.randn(2, 7, 9, dtype=D, requires_grad=True)
judge(
    "_NullSpaceBasis raw basis (not unique)",
    lambda x: _NullSpaceBasis.apply(x)[0],
    (X,),
    second=False,
)


def projector(x):
    b = _NullSpaceBasis.apply(x)[0]
    return b @ b.transpose(-1, -2)


judge("_NullSpaceBasis projector B B^T (basis-invariant, as the solver uses it)", projector, (X,))
