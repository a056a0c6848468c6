"""The inferred spec as text: the YAML that zero-config `check` suggests and `init` writes,
one commented line per input, and the file it is named after."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml

from gradverify.inference.choice import (
    CALLABLE,
    NUMBER,
    TENSOR,
    Choice,
    Inference,
    case_name,
    kind_of,
)
from gradverify.inference.rules.structure import is_plain_twin
from gradverify.inference.surrogates import surrogate_comment
from gradverify.spec.targets import parse_target


def file_name(target_spec: str) -> str:
    """The spec file named after the target: ClippedReLU -> clipped_relu.yaml.

    A word starts at a capital followed by a lower-case letter (Clipped, Log, Sum), after an
    acronym too (ReLUFunction -> relu_function, SoftmaxWithLSEOk -> softmax_with_lse_ok); a
    run of three capitals or more is a word of its own (FusedBiasGELU -> fused_bias_gelu),
    and so are one or two after a word of three letters or more (LayerNormOD ->
    layer_norm_od, ClampA -> clamp_a), so that mixed-case names such as ReLU and SiLU stay
    whole (MyReLU -> my_relu).
    """
    form = parse_target(target_spec)
    if form is not None and form.op is not None:  # mylib::mysin.default -> mysin
        attr = form.op.split("::")[-1].split(".")[0]
    else:
        attr = target_spec.rsplit(":", 1)[-1].split(".")[-1]
    words = re.sub(
        r"(?<=[a-z0-9])(?=[A-Z][a-z])|(?<=[A-Z])(?=[A-Z][a-z]{2,})|(?<=[A-Z]{2})(?=[A-Z][a-z])"
        r"|(?<=[a-z0-9])(?=[A-Z]{3,}(?![a-z]))|(?<=[a-z]{3})(?=[A-Z]{1,2}(?![a-z]))",
        "_",
        attr,
    )
    return words.lower() + ".yaml"


def spec_text(inference: Inference, case: str = "basic", header: Sequence[str] = ()) -> str:
    """The inferred spec as YAML, one commented line per input saying what was chosen; a
    case for each inferred case."""
    lines = [*header, f"target: {inference.target}"]
    if inference.surrogate:  # the user's declaration, read from the docstring
        lines.append(f"gradient: surrogate   # {surrogate_comment(inference.surrogate)}")
    elif inference.random_backward is not None:  # measured: two runs differ by the seed
        lines.extend(inference.random_backward.spec_lines())
    lines.append("cases:")
    for label, choices in inference.cases:
        if is_plain_twin(inference.choices, choices):
            continue  # the structure is the Function's contract: the spec keeps it
        lines.append(f"  - name: {flow(case_name(case, label))}")
        lines.extend(_inputs(choices, inference.variadic))
    return "\n".join(lines) + "\n"


def _inputs(choices: Sequence[Choice], variadic: str | None) -> list[str]:
    lines = ["    inputs:" if choices else "    inputs: []"]
    items = [flow(choice.item) for choice in choices]
    width = max((len(item) for item in items), default=0)
    for item, choice in zip(items, choices, strict=True):
        lines.append(f"      - {item.ljust(width)}   # {comment(choice)}")
    if variadic is not None:
        lines.append(f"      # *{variadic}: add its inputs here")
    return lines


def comment(choice: Choice) -> str:
    """The YAML comment beside an input: what it is and why it was chosen."""
    if choice.kind == TENSOR:
        what = "a tensor"
    elif choice.kind == NUMBER:
        what = f"a {kind_of(choice.value)}"
    elif choice.kind == CALLABLE:
        what = "a function"
    else:
        return f"{choice.name}: {choice.reason}"
    return f"{choice.name}: {what}" + (f" ({choice.reason})" if choice.reason else "")


def flow(value: Any) -> str:
    """`value` as one line of YAML that loads back to it."""
    if isinstance(value, tuple):
        value = list(value)
    try:
        text = yaml.safe_dump(value, default_flow_style=True, width=2**31, sort_keys=False)
    except yaml.YAMLError:
        return f"null  # TODO: {value!r} has no YAML form"
    return text.removesuffix("...\n").strip()
