"""Index tensors that `gather` or `take_along_dim` read a tensor with: torch asks the index
to have the tensor's rank and no more than its size along every other dim, and a Function
that gathers one class per row (`p.gather(1, target.unsqueeze(1))`) combines the gathered
values with the whole rows, so the index is as long as the tensor along those dims (target
as long as scores' dim 0), never shorter by chance of a layout.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradverify.inference.choice import TENSOR, Choice, is_float_tensor
from gradverify.inference.reading.dataflow import Flow, target_flow
from gradverify.target.syntax import called_name, is_module, literal_int, own_nodes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


@dataclass(frozen=True)
class Gathered:
    """An index parameter and the parameter it reads: the index is the source's shape with
    the axis `dropped` taken out (`target.unsqueeze(1)`), or its whole shape (None)."""

    source: str
    dropped: int | None


def gathered(flow: Flow) -> dict[str, Gathered]:
    """index parameter -> what it gathers from, for `x.gather(dim, index)`,
    `torch.gather(x, dim, index)` and `torch.take_along_dim(x, index, dim)`."""
    found: dict[str, Gathered] = {}
    if flow.forward is None:
        return found
    for node in own_nodes(flow.forward):
        if not isinstance(node, ast.Call):
            continue
        operands = _operands(node)
        if operands is None:
            continue
        source_node, index_node = operands
        index = _index(index_node, flow.parameters)
        sources = [name for name in flow.parameters if name in flow.sources(source_node)]
        if index is not None and sources and sources[0] != index[0]:
            found.setdefault(index[0], Gathered(sources[0], index[1]))
    return found


def fit(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` with each gathering index as long as what it gathers from asks, at the
    rank it has."""
    if not any(c.dtype == "int64" and c.kind == TENSOR for c in choices):
        return list(choices)
    reads = gathered(target_flow(target))
    by_name = {c.name: c for c in choices}
    fitted = []
    for choice in choices:
        read = reads.get(choice.name)
        source = by_name.get(read.source) if read is not None else None
        if read is not None and source is not None and is_float_tensor(source) and source.shape:
            shape = list(source.shape)
            if read.dropped is not None and -len(shape) <= read.dropped < len(shape):
                del shape[read.dropped]
            # only its sizes, never its rank: a case that gives the source another rank
            # (a batch) is not one the Function need take, and an index of the base rank
            # lets forward say so
            if (
                choice.dtype == "int64"
                and choice.kind == TENSOR
                and len(choice.shape) == len(shape)
            ):
                reason = f"gathers from {source.name}: its size along the other dims"
                choice = replace(choice, shape=tuple(shape), reason=reason)
        fitted.append(choice)
    return fitted


def _operands(call: ast.Call) -> tuple[ast.AST, ast.AST] | None:
    """(what is gathered from, the index) of a gather-like call."""
    name = called_name(call)
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    func = call.func
    module = isinstance(func, ast.Attribute) and is_module(func.value)
    arguments = list(call.args)
    if name == "gather":
        if module:  # torch.gather(input, dim, index)
            source = arguments[0] if arguments else keywords.get("input")
            index = arguments[2] if len(arguments) > 2 else keywords.get("index")
        else:  # input.gather(dim, index)
            source = func.value if isinstance(func, ast.Attribute) else None
            index = arguments[1] if len(arguments) > 1 else keywords.get("index")
    elif name == "take_along_dim":
        if module:  # torch.take_along_dim(input, indices, dim)
            source = arguments[0] if arguments else keywords.get("input")
            index = arguments[1] if len(arguments) > 1 else keywords.get("indices")
        else:
            source = func.value if isinstance(func, ast.Attribute) else None
            index = arguments[0] if arguments else keywords.get("indices")
    else:
        return None
    return (source, index) if source is not None and index is not None else None


def _index(node: ast.AST, parameters: tuple[str, ...]) -> tuple[str, int | None] | None:
    """(parameter, the axis it is unsqueezed at) for `idx`, `idx.unsqueeze(k)`,
    `idx[:, None]` or `idx[..., None]`; None for anything else."""
    if isinstance(node, ast.Name) and node.id in parameters:
        return node.id, None
    if (
        isinstance(node, ast.Call)
        and called_name(node) == "unsqueeze"
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in parameters
        and len(node.args) == 1
    ):
        axis = literal_int(node.args[0])
        return (node.func.value.id, axis) if axis is not None else None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in parameters
        and isinstance(node.slice, ast.Tuple)
    ):
        parts = node.slice.elts
        nones = [i for i, p in enumerate(parts) if isinstance(p, ast.Constant) and p.value is None]
        if len(nones) == 1 and len(parts) == 2:  # idx[:, None] -> 1; idx[None, :] -> 0
            first = parts[0]
            ellipsis = isinstance(first, ast.Constant) and first.value is ...
            return node.value.id, (-1 if ellipsis else nones[0])
    return None
