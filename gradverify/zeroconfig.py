"""Zero-config runs: a spec inferred from forward's signature when the user wrote none."""

from __future__ import annotations

from typing import Any

import yaml

from gradverify.errors import GradverifyError
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import Case, FunctionSpec, LiteralInput, TensorInput
from gradverify.target import Target

INFERRED_SHAPE = [4]


class InferenceError(GradverifyError):
    """forward rejected the inputs inferred from its signature."""


def infer_entry(target: Target) -> tuple[SpecEntry, str]:
    """A spec entry for `target` with one case, and a note saying what was inferred."""
    inputs: list[Any] = []
    described = []
    for name in target.parameters:
        if name in target.defaults:
            inputs.append(LiteralInput(value=target.defaults[name]))
            described.append(f"{name}={target.defaults[name]!r}")
        else:
            inputs.append(TensorInput(shape=list(INFERRED_SHAPE)))
            described.append(f"{name}: float64 tensor {INFERRED_SHAPE}")
    spec = FunctionSpec(target=target.spec, cases=[Case(name="inferred", inputs=inputs)])
    note = (
        f"no spec names {target.spec}; inputs inferred from forward's signature "
        f"({', '.join(described) or 'no arguments'}). Write a spec to choose shapes and values."
    )
    _probe(target, spec)
    return SpecEntry(spec=spec, file=None), note


def _probe(target: Target, spec: FunctionSpec) -> None:
    import torch

    from gradverify.inputs import build_inputs

    arguments = build_inputs(spec.cases[0], spec.seed)
    with torch.random.fork_rng(devices=[]):  # the user's global RNG is left as it was
        try:
            target.call(*arguments)
        except Exception as error:
            raise InferenceError(_explain(target, error)) from None


def _explain(target: Target, error: Exception) -> str:
    lines = [
        f"cannot infer inputs for {target.spec}: forward rejected float64 tensors of shape "
        f"{INFERRED_SHAPE} ({type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''})",
        "Write a spec that gives the inputs, e.g. specs/" + _file_name(target) + ":",
        "",
        f"target: {target.spec}",
        "cases:",
        "  - name: basic",
        "    inputs:",
    ]
    for name in target.parameters:
        if name in target.defaults:
            lines.append(f"      - {_yaml_literal(target.defaults[name])}   # {name}")
        else:
            lines.append(
                f"      - {{shape: [2, 3], low: -1.0, high: 1.0}}   # {name}: choose its shape"
            )
    lines += ["", f"then run: gradverify check specs/{_file_name(target)}"]
    return "\n".join(lines)


def _file_name(target: Target) -> str:
    attr = target.spec.rsplit(":", 1)[-1].split(".")[-1]
    return "".join("_" + c.lower() if c.isupper() else c for c in attr).lstrip("_") + ".yaml"


def _yaml_literal(value: Any) -> str:
    """`value` as a YAML flow literal that loads back to it (a tuple as a list)."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, dict):
        value = {"value": value}  # a bare mapping would be read as a tensor
    try:
        text = yaml.safe_dump(value, default_flow_style=True, width=2**31)
    except yaml.YAMLError:
        return f"null  # TODO: {value!r} has no YAML form"
    return text.removesuffix("...\n").strip()
