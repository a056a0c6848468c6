"""Judge the custom autograd Functions of POT (ot) 0.9.7.post1 with plain gradcheck/gradgradcheck.

Both are local classes of ot.backend.TorchBackend.__init__, reached through the backend instance.
"""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import ot
import torch

nx = ot.backend.get_backend(torch.zeros(1))
ValFunction, MatrixSqrtFunction = nx.ValFunction, nx.MatrixSqrtFunction

# MatrixSqrtFunction through nx.sqrtm: symmetric positive definite matrices (Bures, Gaussian OT).
L = torch.randn(2, 4, 4, dtype=D)
S = (L @ L.transpose(-1, -2) + 0.5 * torch.eye(4, dtype=D)).requires_grad_()
judge("MatrixSqrtFunction (SPD, once_differentiable)", MatrixSqrtFunction.apply, (S,), second=False)
try:
    torch.autograd.gradgradcheck(MatrixSqrtFunction.apply, (S,))
    print("MatrixSqrtFunction: gradgradcheck pass")
except Exception as e:
    first = str(e).strip().splitlines()[0][:120]
    print(
        f"MatrixSqrtFunction: gradgradcheck FAIL, once_differentiable ({type(e).__name__}: {first})"
    )

# ValFunction through ot.emd2: the exact OT cost with the transport plan as gradient wrt M.
a = torch.tensor([0.2, 0.3, 0.5], dtype=D)
b = torch.tensor([0.4, 0.6], dtype=D)
M = torch.rand(3, 2, dtype=D, requires_grad=True)
judge("ValFunction via ot.emd2 (cost matrix M)", lambda m: ot.emd2(a, b, m), (M,), second=False)
# Alone, val is an input the Function returns as is; its backward hands out the given grads.
val = torch.tensor(1.0, dtype=D, requires_grad=True)
judge(
    "ValFunction alone (grads unrelated to val)",
    lambda v, m: ValFunction.apply(v, (torch.ones_like(m),), m),
    (val, M),
    second=False,
)
