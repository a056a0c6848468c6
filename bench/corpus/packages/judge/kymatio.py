"""Judge the custom autograd Function of kymatio 0.3.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from kymatio.backend.torch_backend import ModulusStable

# TorchBackend.modulus: a real tensor whose last dim (2) holds the real and imaginary parts.
z = torch.randn(2, 3, 5, 2, dtype=D, requires_grad=True)
judge("ModulusStable", ModulusStable.apply, (z,))
# At z = 0 the docstring promises the subgradient 0 rather than NaN.
z0 = torch.zeros(1, 2, dtype=D, requires_grad=True)
(g,) = torch.autograd.grad(ModulusStable.apply(z0).sum(), z0)
print(f"ModulusStable at 0: gradient {g.tolist()} (documented: 0)")
