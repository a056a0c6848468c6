"""torchkbnufft through its public API: KbNufft / KbNufftAdjoint (table and sparse-matrix interpolation)."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import math  # noqa: E402

import torch  # noqa: E402
import torchkbnufft as tkbn  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
im_size = (16, 16)
omega = (torch.rand(2, 64) * 2 - 1) * math.pi
image = torch.randn(1, 1, *im_size, dtype=torch.complex64, requires_grad=True)
nufft = tkbn.KbNufft(im_size=im_size)
adjnufft = tkbn.KbNufftAdjoint(im_size=im_size)
kdata = nufft(image, omega)
recon = adjnufft(kdata, omega)
recon.abs().pow(2).sum().backward()
mats = tkbn.calc_tensor_spmatrix(omega, im_size=im_size)
kdata = nufft(image, omega, interp_mats=mats)
adjnufft(kdata, omega, interp_mats=mats).abs().sum().backward()
print("torchkbnufft usage ok")
