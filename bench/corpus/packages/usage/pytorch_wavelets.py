"""pytorch_wavelets through its public API: DWT/IDWT (2-D, 1-D), DTCWT and ScatterNet layers with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import warnings  # noqa: E402

import torch  # noqa: E402

warnings.filterwarnings("ignore")
from pytorch_wavelets import (  # noqa: E402
    DTCWTForward,
    DTCWTInverse,
    DWT1DForward,
    DWT1DInverse,
    DWTForward,
    DWTInverse,
    ScatLayer,
    ScatLayerj2,
)
from pytorch_wavelets.scatternet.lowlevel import SmoothMagFn  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(2, 3, 16, 16, requires_grad=True)
yl, yh = DWTForward(J=2, wave="db2", mode="zero")(x)
rec = DWTInverse(wave="db2", mode="zero")((yl, yh))
rec.pow(2).mean().backward()
# Denoising: rebuild from the detail bands only, with a constant lowpass.
yh2 = [h.detach().requires_grad_() for h in yh]
DWTInverse(wave="db2", mode="zero")((torch.zeros_like(yl), yh2)).sum().backward()

s = torch.randn(2, 3, 20, requires_grad=True)
lo, hi = DWT1DForward(J=2, wave="db2")(s)
DWT1DInverse(wave="db2")((lo, hi)).pow(2).sum().backward()

low, highs = DTCWTForward(J=2)(x)
DTCWTInverse()((low, highs)).pow(2).mean().backward()

ScatLayer()(x).mean().backward()
ScatLayer(biort="near_sym_b_bp")(x).mean().backward()
ScatLayerj2()(x).mean().backward()
ScatLayerj2(biort="near_sym_b_bp", qshift="qshift_b_bp")(x).mean().backward()

# SmoothMagFn has no caller in the package: the smooth magnitude of a complex pair.
re, im = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)
SmoothMagFn.apply(re, im, 1e-2).sum().backward()
print("pytorch_wavelets usage ok")
