"""A GPU run as repeatable as a CPU run (issue 24): TF32 off while the checks run, CUDA's RNG
saved and seeded for the devices a case uses, a fork server that never initialises CUDA, and
an out-of-memory on the GPU that fails its case alone, saying so."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from gradverify.engine.repeatable import cuda_devices
from gradverify.memory import out_of_memory
from gradverify.spec.models import Case
from tests.functions import device_state

SPECS = """
functions:
  - target: tests.functions.device_state:{first}
    cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
  - target: tests.functions.device_state:RecordsPrecision
    cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
"""


@pytest.fixture
def tf32_on() -> Iterator[None]:
    """TF32 allowed for float32 matmuls and convolutions, as many training scripts set it."""
    switches = (torch.backends.cuda.matmul, torch.backends.cudnn.conv)
    before = [switch.fp32_precision for switch in switches]
    for switch in switches:
        switch.fp32_precision = "tf32"
    yield
    for switch, value in zip(switches, before, strict=True):
        switch.fp32_precision = value


def test_tf32_is_off_while_the_checks_run_and_restored_after(
    tf32_on: None, run_spec: Callable[..., Any], find: Callable[..., list[Any]]
) -> None:
    device_state.SEEN.clear()
    report = run_spec(SPECS.format(first="RecordsPrecision"))
    assert not find(report, status="fail")
    assert device_state.SEEN and set(device_state.SEEN) == {("ieee", "ieee")}
    assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert torch.backends.cudnn.conv.fp32_precision == "tf32"


def test_out_of_gpu_memory_fails_its_case_saying_so_and_the_others_run(
    run_spec: Callable[..., Any], find: Callable[..., list[Any]], only: Callable[..., Any]
) -> None:
    report = run_spec(SPECS.format(first="BackwardOutOfMemory"))
    backward = only(
        report, target="tests.functions.device_state:BackwardOutOfMemory", check="backward"
    )
    assert backward.status.value == "fail"
    assert "ran out of memory" in backward.message
    assert "tried to allocate 20.00 GiB on cuda:0, which has 79.19 GiB in all" in backward.message
    others = find(report, target="tests.functions.device_state:RecordsPrecision")
    assert others and not [r for r in others if r.status.value == "fail"]


def test_a_cuda_out_of_memory_names_the_card_and_a_cpu_one_the_machine() -> None:
    gpu = out_of_memory(torch.OutOfMemoryError(device_state.CUDA_OUT_OF_MEMORY))
    assert (
        gpu == "tried to allocate 20.00 GiB on cuda:0, which has 79.19 GiB in all (3.12 GiB free)"
    )
    cpu = out_of_memory(RuntimeError("can't allocate memory: you tried to allocate 8000000 bytes"))
    assert cpu.startswith("tried to allocate 8.0 MB; this machine has")


def test_the_rng_of_each_cuda_device_a_case_names_is_saved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    on_gpus = Case.model_validate(
        {
            "name": "c",
            "inputs": [{"shape": [2], "device": "cuda:1"}, {"shape": [2], "device": "cuda"}],
        }
    )
    on_cpu = Case.model_validate({"name": "c", "inputs": [{"shape": [2]}, 3]})
    beyond = Case.model_validate({"name": "c", "inputs": [{"shape": [2], "device": "cuda:3"}]})
    assert cuda_devices(on_gpus) == [0, 1]
    assert cuda_devices(on_cpu) == []
    assert cuda_devices(beyond) == []  # left to require_device, which names the devices there
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert cuda_devices(on_cpu) == [0, 1]  # the user's code may draw on any of them


def test_the_fork_server_never_asks_about_cuda(fresh_python: Callable[[str], str]) -> None:
    """Importing what the server preloads calls nothing of torch.cuda: a server that had
    initialised CUDA would fork workers that cannot use it."""
    code = """
import torch
asked = []
for name in ("is_available", "device_count", "init", "_lazy_init", "current_device"):
    original = getattr(torch.cuda, name)
    setattr(torch.cuda, name, lambda *a, _name=name, **k: asked.append(_name) or 0)
from gradverify.run.forkserver import PRELOAD
for module in PRELOAD:
    __import__(module)
print(sorted(set(asked)), torch.cuda.is_initialized())
"""
    assert fresh_python(code) == "[] False"
