"""A found case as YAML to paste under a spec's `cases:`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradverify.engine.explore.draws import explorable
from gradverify.inference.spec_text import flow
from gradverify.spec.models import CallableInput, Case, LiteralInput, TensorInput

# A drawn tensor with at most this many elements is written with its `values`.
MAX_VALUES = 64


def case_snippet(case: Case, arguments: Sequence[Any], name: str) -> list[str]:
    """The lines of a case named `name` holding `arguments` (drawn tensors as `values`)."""
    inputs = [_input(item, argument) for item, argument in zip(case.inputs, arguments, strict=True)]
    lines = [f"- name: {flow(name)}", "  inputs:"]
    lines.extend(f"    - {flow(item)}" for item in inputs)
    return lines


def fits_in_values(argument: Any) -> bool:
    return isinstance(argument, torch.Tensor) and argument.numel() <= MAX_VALUES


def _input(item: Any, argument: Any) -> Any:
    if explorable(item) and isinstance(argument, torch.Tensor):
        assert isinstance(item, TensorInput)
        written: dict[str, Any] = (
            {"values": argument.detach().cpu().tolist()}
            if fits_in_values(argument)
            else {"shape": list(argument.shape)}
        )
        kept = item.model_dump(exclude_defaults=True, exclude={"shape", "values"})
        if "values" in written:  # the range and the structure are in the values now
            kept = {k: v for k, v in kept.items() if k not in ("low", "high", "structure")}
        return {**written, **kept}
    if isinstance(item, TensorInput):
        return item.model_dump(exclude_defaults=True)
    if isinstance(item, LiteralInput):
        return {"value": item.value}
    if isinstance(item, CallableInput):
        return {"callable": item.callable}
    return item
