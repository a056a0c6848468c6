"""Judge the custom autograd Function of geomloss 0.3.1 with plain gradcheck/gradgradcheck."""

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


from geomloss._legacy.kernel_samples import DoubleGrad, kernel_tensorized  # noqa: E402

# DoubleGrad alone: an identity whose backward doubles the gradient, by design.
x = torch.randn(4, 3, dtype=D, requires_grad=True)
judge("DoubleGrad alone (identity forward, doubled backward)", DoubleGrad.apply, (x,), second=False)
# As kernel_loss uses it: k(double_grad(x), x.detach()) stands for the symmetric k(x, x), whose
# derivative is twice that of one argument. The kernel (MMD) loss then has its true gradient.
a = torch.full((4,), 0.25, dtype=D)
y = torch.randn(5, 3, dtype=D)
b = torch.full((5,), 0.2, dtype=D)
# (kernel_loss detaches alpha and x on one side, so only the first derivative is meaningful.)
judge(
    "DoubleGrad in kernel_tensorized (gaussian MMD vs weights a and points x)",
    lambda aa, xx: kernel_tensorized(aa, xx, b, y, blur=0.5, name="gaussian"),
    (a.clone().requires_grad_(), x),
    second=False,
)
