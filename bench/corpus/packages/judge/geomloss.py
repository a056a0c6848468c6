"""Judge the custom autograd Function of geomloss 0.3.1 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from geomloss._legacy.kernel_samples import DoubleGrad, kernel_tensorized

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
