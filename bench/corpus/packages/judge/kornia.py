"""Judge the two custom autograd Functions of kornia 0.9.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from kornia.geometry.epipolar.essential import _NullSpaceBasis
from kornia.losses.focal import _TargetLogSoftmax

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
