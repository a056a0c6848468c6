"""Index tensors that fit what they index and what they pair with, and that repeat:

- an index given to `index_add_`, `index_copy_`, `index_put_`, `scatter_add` (or
  `bincount`'s weights) with a source parameter has the source's length along the dim (`index_add_(0, ids,
  values)`: ids as long as values), or its shape for the scatter family;
- a count (what forward allocates with as a first size, `new_zeros((num_segments, 4))`,
  or passes as `num_classes`, `minlength`) covers the indices: one more than the largest;
- an index that reads a table (`table[idx]`, `index_select`, `gather`, `take`, `embedding`)
  whose rows forward combines with another tensor (`table[idx] * (1 - frac)`) has that
  tensor's length, at least READ_LENGTH, and the tensor the index's;
- at least one index repeats, so that a backward that assigns where it must accumulate
  (`gw[idx] = g`) is caught on every seed: an index whose length is fixed draws from fewer
  values than its length; one whose length is free gets a case long enough to repeat.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.choice import NUMBER, TENSOR, Choice, is_float_tensor, with_choice
from gradverify.inference.extra import Extra
from gradverify.inference.reading.dataflow import Flow, target_flow
from gradverify.inference.reading.docstrings import bounding
from gradverify.inference.reading.facts import code_facts
from gradverify.target.syntax import called_name, is_module, own_nodes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# Calls that pair an index with a source: (index position, source position) as a method
# writes them (`out.index_add_(dim, index, source)`), and whether the index has the source's
# whole shape (the scatter family) or its length along dim.
PAIRING_CALLS = {
    "index_add": (1, 2, False), "index_add_": (1, 2, False), "index_copy": (1, 2, False),
    "index_copy_": (1, 2, False), "index_reduce": (1, 2, False), "index_reduce_": (1, 2, False),
    "scatter_add": (1, 2, True), "scatter_add_": (1, 2, True), "scatter": (1, 2, True),
    "scatter_": (1, 2, True), "scatter_reduce": (1, 2, True), "scatter_reduce_": (1, 2, True),
}  # fmt: skip
SOURCE_KEYWORDS = ("source", "src")
# Calls that allocate what indices index: a parameter giving their first size (or the
# keyword) counts the indices' values (`values.new_zeros((num_segments, 4))`).
ALLOCATIONS = frozenset({
    "zeros", "new_zeros", "ones", "new_ones", "empty", "new_empty", "full", "new_full",
})  # fmt: skip
COUNT_KEYWORDS = frozenset({"num_classes", "minlength", "dim_size", "num_segments"})
# An index tensor narrowed so that its values repeat (kept so when cases reshape the rest).
REPEATS = "fewer values than its length, so that one repeats"
# Calls that read a table at an index: (table position, index position) as a method writes
# them (`table.index_select(dim, idx)`), and as torch's function does
# (`torch.index_select(table, dim, idx)`, `F.embedding(idx, table)`).
READING_CALLS = {
    "index_select": ((None, 1), (0, 2)), "gather": ((None, 1), (0, 2)),
    "take": ((None, 0), (0, 1)), "take_along_dim": ((None, 0), (0, 1)),
    "embedding": ((1, 0), (1, 0)),
}  # fmt: skip
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# An index that reads a table beside a tensor of its length is this long at least, drawing
# from fewer values: a repeat on every seed, and room for the values between.
READ_LENGTH = 4


def pairs(flow: Flow) -> dict[str, tuple[str, int | None]]:
    """index parameter -> (the parameter it pairs with, the dim along which its length
    agrees, or None where the whole shape does)."""
    found: dict[str, tuple[str, int | None]] = {}
    if flow.forward is None:
        return found
    for node in own_nodes(flow.forward):
        if not isinstance(node, ast.Call):
            continue
        index, source, dim, whole = _paired_arguments(node)
        if index is None or source is None:
            continue
        indices = sorted(flow.sources(index))
        sources = [name for name in flow.parameters if name in flow.sources(source)]
        if len(indices) == 1 and sources and sources[0] != indices[0]:
            found.setdefault(indices[0], (sources[0], None if whole else dim))
    return found


def read_partners(flow: Flow) -> dict[str, tuple[str, tuple[str, ...]]]:
    """index parameter -> (the table it reads, the parameters forward combines the rows
    read with in arithmetic: `table[idx] * (1 - frac)` -> ("table", ("frac",)))."""
    if flow.forward is None:
        return {}
    read: dict[str, str] = {}
    for node in own_nodes(flow.forward):
        table_node, index_node = _read_arguments(node)
        if table_node is None or index_node is None:
            continue
        tables = flow.sources(table_node) & set(flow.parameters)
        indices = (flow.sources(index_node) & set(flow.parameters)) - tables
        if len(tables) == 1 and len(indices) == 1:
            read.setdefault(next(iter(indices)), next(iter(tables)))
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for index, table in read.items():
        partners: dict[str, None] = {}
        for node in own_nodes(flow.forward):
            if not isinstance(node, ast.BinOp) or not isinstance(node.op, ARITHMETIC):
                continue
            for rows, other in ((node.left, node.right), (node.right, node.left)):
                read_side, other_side = flow.sources(rows), flow.sources(other)
                if {index, table} <= read_side and not {index, table} & other_side:
                    partners.update(dict.fromkeys(sorted(other_side - read_side)))
        if partners:
            found[index] = (table, tuple(partners))
    return found


def _read_arguments(node: ast.AST) -> tuple[ast.AST | None, ast.AST | None]:
    """(table, index) of `table[idx]` or a call that reads a table at an index."""
    if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Store | ast.Del):
        if not isinstance(node.slice, ast.Slice | ast.Tuple):
            return node.value, node.slice
        return None, None
    if not isinstance(node, ast.Call) or called_name(node) not in READING_CALLS:
        return None, None
    method, function = READING_CALLS[called_name(node)]
    receiver = _receiver(node)
    if receiver is not None and not is_module(receiver) and method[0] is None:
        at = method[1]
        return receiver, node.args[at] if at < len(node.args) else None
    table_at, index_at = function
    if max(table_at, index_at) >= len(node.args):
        return None, None
    return node.args[table_at], node.args[index_at]


def _paired_arguments(
    call: ast.Call,
) -> tuple[ast.AST | None, ast.AST | None, int, bool]:
    name = called_name(call)
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if name == "bincount":  # torch.bincount(ids, weights=values)
        first = call.args[0] if call.args else keywords.get("input")
        return first, keywords.get("weights"), 0, False
    if name in ("index_put", "index_put_"):  # out.index_put_((ids,), values, accumulate=True)
        arguments = call.args[1:] if is_module(_receiver(call)) else call.args
        indices = arguments[0] if arguments else keywords.get("indices")
        first = (
            indices.elts[0] if isinstance(indices, ast.Tuple | ast.List) and indices.elts else None
        )
        values = arguments[1] if len(arguments) > 1 else keywords.get("values")
        return first, values, 0, False
    if name not in PAIRING_CALLS:
        return None, None, 0, False
    index_at, source_at, whole = PAIRING_CALLS[name]
    arguments = list(call.args)
    if isinstance(call.func, ast.Attribute) and is_module(call.func.value):
        arguments = arguments[1:]  # torch.index_add(out, dim, index, source)
    index = arguments[index_at] if index_at < len(arguments) else keywords.get("index")
    source = arguments[source_at] if source_at < len(arguments) else None
    source = source or next((keywords[k] for k in SOURCE_KEYWORDS if k in keywords), None)
    dim_node = arguments[0] if arguments else keywords.get("dim")
    dim = dim_node.value if isinstance(dim_node, ast.Constant) else 0
    return index, source, dim if isinstance(dim, int) else 0, whole


def _receiver(call: ast.Call) -> ast.AST | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def counts(flow: Flow) -> frozenset[str]:
    """The parameters forward allocates with as a first size (`new_zeros((n, 4))`,
    `torch.zeros(n)`) or passes as `num_classes`, `minlength`: counts of index values."""
    found: set[str] = set()
    for node in own_nodes(flow.forward) if flow.forward is not None else []:
        if not isinstance(node, ast.Call):
            continue
        name = called_name(node)
        sized: list[ast.AST] = [k.value for k in node.keywords if k.arg in COUNT_KEYWORDS]
        if name == "one_hot" and len(node.args) > 1:
            sized.append(node.args[1])
        elif name in ALLOCATIONS and node.args:
            first = node.args[0]
            sized.append(first.elts[0] if isinstance(first, ast.Tuple) and first.elts else first)
        found |= {n.id for n in sized if isinstance(n, ast.Name) and n.id in flow.parameters}
    return frozenset(found)


def fit(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` with each paired index as long as its source, narrowed to repeat, and each
    count (forward allocates with it, or the docstring ends an index range with it: `[0,
    num_segments)`) one more than the largest index."""
    if not any(c.dtype == "int64" and c.kind == TENSOR for c in choices):
        return list(choices)
    flow = target_flow(target)
    paired = pairs(flow)
    choices = _grown_sources(_read_beside(choices, read_partners(flow)), paired)
    by_name = {c.name: c for c in choices}
    fitted = []
    for choice in choices:
        partner = paired.get(choice.name)
        source = by_name.get(partner[0]) if partner else None
        if choice.dtype == "int64" and source is not None and is_float_tensor(source):
            choice = _paired(choice, source, partner[1] if partner else None)
        if choice.dtype == "int64" and REPEATS in choice.reason and choice.high > 1:
            # a spec's range needs low < high: 0..1 at least
            choice = replace(choice, high=max(1, min(choice.high, math.prod(choice.shape) - 2)))
        fitted.append(choice)
    documented = bounding(code_facts(target).docstrings, target.parameters)
    return _counts(fitted, counts(flow) | documented)


def _read_beside(
    choices: Sequence[Choice], partners: dict[str, tuple[str, tuple[str, ...]]]
) -> list[Choice]:
    """Each index that reads a vector beside vectors it pairs with (`table[idx] * frac`):
    index and partners of one length N, the partner's where it is READ_LENGTH or more,
    drawing from fewer values than N (a repeat on every seed)."""
    fitted = list(choices)
    position = {c.name: i for i, c in enumerate(fitted)}
    for name, (table_name, partner_names) in partners.items():
        index, table = fitted[position[name]], fitted[position.get(table_name, position[name])]
        beside = [
            position[p]
            for p in partner_names
            if p in position and is_float_tensor(fitted[position[p]])
            and len(fitted[position[p]].shape) == 1
        ]  # fmt: skip
        vector = is_float_tensor(table) and len(table.shape) == 1
        if index.dtype != "int64" or len(index.shape) != 1 or not vector or not beside:
            continue
        length = max(READ_LENGTH, *(math.prod(fitted[p].shape) for p in beside))
        reason = f"reads {table_name} beside {fitted[beside[0]].name}, with {REPEATS}"
        fitted[position[name]] = replace(index, shape=(length,), reason=reason)
        for p in beside:
            fitted[p] = replace(fitted[p], shape=(length,))
    return fitted


def _grown_sources(
    choices: Sequence[Choice], paired: dict[str, tuple[str, int | None]]
) -> list[Choice]:
    """Each source an index pairs with along a dim shorter than READ_LENGTH there made
    longer (values [2, 4] -> [5, 4]: ids [2] of segments 0..1 repeat on half the seeds)."""
    fitted = list(choices)
    position = {c.name: i for i, c in enumerate(fitted)}
    for name, (source_name, dim) in paired.items():
        if name not in position or source_name not in position or dim is None:
            continue
        source = fitted[position[source_name]]
        if fitted[position[name]].dtype != "int64" or not is_float_tensor(source):
            continue
        if not -len(source.shape) <= dim < len(source.shape) or source.shape[dim] >= READ_LENGTH:
            continue
        shape = list(source.shape)
        shape[dim] = next(n for n in range(READ_LENGTH, 99) if n not in source.shape)
        fitted[position[source_name]] = replace(source, shape=tuple(shape))
    return fitted


def _paired(index: Choice, source: Choice, dim: int | None) -> Choice:
    if dim is None:
        shape = source.shape
    elif source.shape and -len(source.shape) <= dim < len(source.shape):
        shape = (source.shape[dim],)
    else:
        return index
    if not shape:
        return index
    return replace(index, shape=shape, reason=f"as long as {source.name}, with {REPEATS}")


def _counts(choices: list[Choice], names: frozenset[str]) -> list[Choice]:
    top = max((int(c.high) for c in choices if c.dtype == "int64" and c.kind == TENSOR), default=0)
    reason = "a count: one more than the largest index"
    return [
        Choice(c.name, NUMBER, value=top + 1, reason=reason)
        if c.name in names and (c.kind == NUMBER or is_float_tensor(c))
        else c
        for c in choices
    ]


def repeats(target: Target, base: Sequence[Choice]) -> Iterator[Extra]:
    """For an index whose length is free and too short to be sure of a repeat (idx [2]
    into 3 rows repeats on a third of the seeds): the same index, long enough that one
    repeats (idx [4]); and where forward wants that length, fewer values than its length."""
    paired = pairs(target_flow(target))
    read = read_partners(target_flow(target))
    for position, choice in enumerate(base):
        if choice.dtype != "int64" or choice.kind != TENSOR or choice.name in paired:
            continue
        if choice.name in read and REPEATS in choice.reason:
            continue  # reads beside a tensor of its length: it repeats already
        length = math.prod(choice.shape)
        if len(choice.shape) != 1 or length >= choice.high + 2 or choice.high < 1:
            continue
        longer = replace(choice, shape=(int(choice.high) + 2,), reason="long enough to repeat")
        yield Extra(f"{choice.name} [{int(choice.high) + 2}]", with_choice(base, position, longer))
        if length >= 3:  # 0..length - 2, and a spec's range needs low < high
            narrowed = replace(choice, high=length - 2, reason=REPEATS)
            label = f"{choice.name} {list(choice.shape)} in 0..{length - 2}"
            yield Extra(label, with_choice(base, position, narrowed))
