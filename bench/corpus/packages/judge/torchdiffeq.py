"""Judge the custom autograd Functions of torchdiffeq 0.2.5 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from torchdiffeq import odeint_adjoint, odeint_event
from torchdiffeq._impl.misc import _StitchGradient
from torchdiffeq._impl.odeint import ImplicitFnGradientRerouting
from torchdiffeq._impl.rk_common import _UncheckedAssign

# _UncheckedAssign as _runge_kutta_step uses it: a fresh torch.empty scratch, stage values assigned
# one slot after the other, so the overwritten slot never holds a differentiable value.
f0, f1 = torch.randn(3, dtype=D, requires_grad=True), torch.randn(3, dtype=D, requires_grad=True)


def rk_stages(a, b):
    k = torch.zeros(3, 3, dtype=D)
    k = _UncheckedAssign.apply(k, a, (..., 0))
    k = _UncheckedAssign.apply(k, b, (..., 1))
    return k * 1.0


judge("_UncheckedAssign (stage values into a fresh scratch)", rk_stages, (f0, f1))

# _StitchGradient(x1, out): out = nextafter(x1, ...) computed without grad; x1 gets grad_out as is.
t = torch.tensor([0.3, 1.2], dtype=D, requires_grad=True)
judge(
    "_StitchGradient (straight-through for nextafter)",
    lambda x: _StitchGradient.apply(x, torch.nextafter(x, x + 1).detach()),
    (t,),
    second=False,
)
# Called alone, out is a separate input the Function ignores: d out / d x1 is 0, its backward says 1.
judge(
    "_StitchGradient alone (x1, out independent)",
    lambda x, o: _StitchGradient.apply(x, o),
    (t, torch.tensor([0.5, 0.5], dtype=D, requires_grad=True)),
    second=False,
)


class Decay(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.nn.Parameter(torch.tensor([0.7, 1.3], dtype=D))

    def forward(self, t, y):
        return -self.k * y


func = Decay()
y0 = torch.tensor([1.0, 2.0], dtype=D, requires_grad=True)
ts = torch.tensor([0.0, 0.5, 1.0], dtype=D)
tol = {"rtol": 1e-10, "atol": 1e-12, "method": "dopri5"}
# OdeintAdjointMethod through odeint_adjoint: the continuous adjoint gradient, with tight tolerances.
judge(
    "OdeintAdjointMethod (odeint_adjoint, y0 and the module's parameter)",
    lambda y, k: odeint_adjoint(lambda tt, yy: -k * yy, y, ts, adjoint_params=(k,), **tol),
    (y0, func.k),
    second=False,
    atol=1e-6,
)


# ImplicitFnGradientRerouting through odeint_event: the event time as a function of y0.
def event_time(y):
    ev, _ = odeint_event(
        func, y, torch.tensor(0.0, dtype=D), event_fn=lambda tt, yy: yy[0] - 0.5, **tol
    )
    return ev


judge(
    "ImplicitFnGradientRerouting (odeint_event, event time vs y0)",
    event_time,
    (y0,),
    second=False,
    atol=1e-6,
)
# Called alone on (event_t, state_t) it is an identity whose backward adds the implicit-function term.
et, st = (
    torch.tensor(0.9, dtype=D, requires_grad=True),
    torch.tensor([0.5, 1.0], dtype=D, requires_grad=True),
)
judge(
    "ImplicitFnGradientRerouting alone (identity forward)",
    lambda a, b: ImplicitFnGradientRerouting.apply(func, lambda tt, yy: yy[0] - 0.5, a, b),
    (et, st),
    second=False,
)
