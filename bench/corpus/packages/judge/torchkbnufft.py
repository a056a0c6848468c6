"""Judge every custom autograd Function of torchkbnufft 1.4.0 with plain gradcheck/gradgradcheck."""

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


import math  # noqa: E402

import torchkbnufft as tkbn  # noqa: E402

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
