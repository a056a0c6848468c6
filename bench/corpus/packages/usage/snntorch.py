"""snntorch through its public API: Leaky neurons with each surrogate, the parallel/kernel layers,
state quantization and the temporal losses, each with a backward."""

import os
import sys

# This folder holds a script named like the package: keep it off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import snntorch as snn  # noqa: E402
import snntorch.functional as SF  # noqa: E402
import torch  # noqa: E402
from snntorch import surrogate  # noqa: E402
from snntorch._neurons.leakykernel import LeakyKernel  # noqa: E402
from snntorch._neurons.leakyunroll import LeakyParallel as LeakyUnroll  # noqa: E402
from snntorch.functional import quant  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
T, B, N_IN, N_OUT = 8, 4, 10, 3
fc = torch.nn.Linear(N_IN, N_OUT)
x = torch.rand(T, B, N_IN) * 2


def run_leaky(lif):
    mem = lif.init_leaky()
    spikes = []
    for step in range(T):
        spk, mem = lif(fc(x[step]), mem)
        spikes.append(spk)
    return torch.stack(spikes)


def fast_sigmoid_rule(input_, grad_input, spikes):
    return grad_input / (25 * torch.abs(input_) + 1.0) ** 2


grads = [
    surrogate.straight_through_estimator(),
    surrogate.triangular(),
    surrogate.fast_sigmoid(slope=25),
    surrogate.atan(alpha=2.0),
    surrogate.heaviside(),
    surrogate.sigmoid(slope=25),
    surrogate.spike_rate_escape(beta=1, slope=25),
    surrogate.SSO(mean=0, variance=0.2),
    surrogate.SFS(slope=25, B=1),
    surrogate.custom_surrogate(fast_sigmoid_rule),
]
for spike_grad in grads:
    run_leaky(snn.Leaky(beta=0.9, spike_grad=spike_grad)).sum().backward()
try:  # LSO's wrapper passes two arguments to StochasticSpikeOperator
    run_leaky(snn.Leaky(beta=0.9, spike_grad=surrogate.LSO(slope=0.1))).sum().backward()
except Exception as e:
    print(f"LSO: {type(e).__name__}: {e}")
try:
    u = fc(x[0]).detach().requires_grad_()
    surrogate.LeakySpikeOperator.apply(u, 0.1).sum().backward()
except Exception as e:
    print(f"LeakySpikeOperator: {type(e).__name__}: {e}")

q_lif = quant.state_quant(num_bits=4, uniform=True, threshold=1.0)
run_leaky(snn.Leaky(beta=0.9, threshold=1.0, state_quant=q_lif)).sum().backward()

for layer in (
    snn.LeakyParallel(input_size=N_IN, hidden_size=N_OUT),
    LeakyKernel(input_size=N_IN, hidden_size=N_OUT),
):
    layer(x).sum().backward()
try:  # leakyunroll (not exported by snntorch) fails in its own forward
    LeakyUnroll(input_size=N_IN)(x).sum().backward()
except Exception as e:
    print(f"leakyunroll.LeakyParallel: {type(e).__name__}: {e}")
    u = fc(x).detach().requires_grad_()
    LeakyUnroll.ATan.apply(u).sum().backward()  # its spike_grad, as its forward would call it

spk_out = run_leaky(snn.Leaky(beta=0.9, spike_grad=surrogate.atan()))
targets = torch.tensor([0, 2, 1, 1])
SF.mse_temporal_loss(on_target=0, off_target=T - 1, tolerance=1)(spk_out, targets).backward()
spk_out = run_leaky(snn.Leaky(beta=0.9, spike_grad=surrogate.atan()))
loss_fn = SF.mse_temporal_loss(
    on_target=torch.tensor((0, 3)), off_target=torch.tensor((6, 7)), multi_spike=True
)
loss_fn(spk_out, targets).backward()
print("snntorch usage ok")
