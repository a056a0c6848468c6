"""Judge the custom autograd Function of kymatio 0.3.0 with plain gradcheck/gradgradcheck."""

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


from kymatio.backend.torch_backend import ModulusStable  # noqa: E402

# TorchBackend.modulus: a real tensor whose last dim (2) holds the real and imaginary parts.
z = torch.randn(2, 3, 5, 2, dtype=D, requires_grad=True)
judge("ModulusStable", ModulusStable.apply, (z,))
# At z = 0 the docstring promises the subgradient 0 rather than NaN.
z0 = torch.zeros(1, 2, dtype=D, requires_grad=True)
(g,) = torch.autograd.grad(ModulusStable.apply(z0).sum(), z0)
print(f"ModulusStable at 0: gradient {g.tolist()} (documented: 0)")
