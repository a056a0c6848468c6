"""torchdiffeq through its public API: odeint (RK stages), odeint_adjoint and odeint_event, with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from torchdiffeq import odeint, odeint_adjoint, odeint_event  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)


class Field(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)
        )

    def forward(self, t, y):
        return self.net(y) - 0.5 * y


func = Field()
y0 = torch.randn(3, 2, requires_grad=True)
t = torch.linspace(0.0, 1.0, 5)
odeint(func, y0, t, method="dopri5").pow(2).mean().backward()
# Learnable observation times: the perturbed step ends (_nextafter) pass their gradient through.
t_obs = torch.tensor([0.0, 0.4, 0.9], requires_grad=True)
forced = lambda tt, yy: func(tt, yy) + torch.sin(3 * tt)  # noqa: E731
odeint(forced, y0, t_obs, method="rk4", options={"perturb": True}).pow(2).mean().backward()
odeint_adjoint(func, y0, t, method="dopri5").pow(2).mean().backward()
y1 = torch.tensor([1.0, 0.3], requires_grad=True)
event_t, state = odeint_event(
    lambda tt, yy: -yy, y1, torch.tensor(0.0), event_fn=lambda tt, yy: yy[0] - 0.5, method="dopri5"
)
event_t.backward()
print("torchdiffeq usage ok")
