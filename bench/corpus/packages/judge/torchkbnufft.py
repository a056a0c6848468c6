"""Judge every custom autograd Function of torchkbnufft 1.4.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import math

import torch
import torchkbnufft as tkbn

# The interpolation layers: complex (batch, coil, *grid_size) images, a k-space trajectory omega
# (ndim, klength) in [-pi, pi], complex (batch, coil, klength) data. omega itself is not differentiated.
im_size, grid_size = (6, 6), (12, 12)
omega = (torch.rand(2, 15, dtype=D) * 2 - 1) * math.pi
C = torch.complex128
image = torch.randn(1, 1, *grid_size, dtype=C, requires_grad=True)
data = torch.randn(1, 1, 15, dtype=C, requires_grad=True)
interp = tkbn.KbInterp(im_size=im_size, grid_size=grid_size, dtype=C)
adj = tkbn.KbInterpAdjoint(im_size=im_size, grid_size=grid_size, dtype=C)
judge("KbTableInterpForward (KbInterp)", lambda x: interp(x, omega), (image,))
judge("KbTableInterpAdjoint (KbInterpAdjoint)", lambda y: adj(y, omega), (data,))
mats = tkbn.calc_tensor_spmatrix(omega, im_size=im_size, grid_size=grid_size)
judge(
    "KbSpmatInterpForward (KbInterp, interp_mats)",
    lambda x: interp(x, omega, interp_mats=mats),
    (image,),
)
judge(
    "KbSpmatInterpAdjoint (KbInterpAdjoint, interp_mats)",
    lambda y: adj(y, omega, interp_mats=mats),
    (data,),
)
