"""What forward's source says about its parameters, read from its syntax tree without
running it: which are used as indices, whether forward handles complex numbers, and the
numbers forward and backward compare their inputs with.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.annotations import annotations_of
from gradverify.target.syntax import (
    FunctionNode,
    called_name,
    is_module,
    own_nodes,
    parsed_function,
)

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# Calls whose argument at the given position (as torch.* writes it), or keyword, is an index
# tensor. As a method (`weight.index_select(0, idx)`) the tensor is the receiver: one less.
INDEX_CALLS = {
    "embedding": (0, "input"), "index_select": (2, "index"), "gather": (2, "index"),
    "take": (1, "index"), "take_along_dim": (1, "indices"), "index_add": (2, "index"),
    "scatter_add": (2, "index"), "nll_loss": (1, "target"), "cross_entropy": (1, "target"),
    "one_hot": (0, "tensor"), "bincount": (0, "input"),
    "masked_fill": (1, "mask"), "masked_select": (1, "mask"), "masked_scatter": (1, "mask"),
    # the in-place spellings, as methods of the tensor written into
    "index_add_": (2, "index"), "index_copy_": (2, "index"), "index_fill_": (2, "index"),
    "scatter_add_": (2, "index"), "scatter_": (2, "index"), "scatter_reduce_": (2, "index"),
    "masked_fill_": (1, "mask"), "masked_scatter_": (1, "mask"),
    # out.index_put_((ids,), values, accumulate=True): the indices are a tuple
    "index_put": (1, "indices"), "index_put_": (1, "indices"),
}  # fmt: skip
# Calls that make indices out of values: their argument is no index (`scores.argmax(-1)`).
VALUES_TO_INDICES = frozenset({
    "argmax", "argmin", "argsort", "topk", "sort", "max", "min", "kthvalue", "mode",
    "multinomial", "searchsorted", "bucketize", "nonzero", "argwhere",
})  # fmt: skip
# Names that conventionally hold indices or class labels.
INDEX_NAMES = re.compile(
    r"^(idx|idxs|index|indices|ids|token_ids|input_ids|target|targets|label|labels)$", re.I
)
# Calls whose int arguments are dims, sizes or counts, never a value an input is compared with.
SHAPE_CALLS = frozenset({
    "view", "reshape", "permute", "transpose", "movedim", "unsqueeze", "squeeze", "flatten",
    "unflatten", "size", "expand", "repeat", "narrow", "split", "chunk", "select",
    "index_select", "gather", "roll", "flip", "cat", "stack", "sum", "mean", "prod", "amax",
    "amin", "max", "min", "argmax", "argmin", "softmax", "log_softmax", "logsumexp", "cumsum",
    "cumprod", "norm", "var", "std", "zeros", "ones", "empty", "full", "arange", "randn",
    "rand", "randint", "range", "tensor", "new_zeros", "new_ones",
})  # fmt: skip
# torch's activations whose branch points lie past [-1, 1] with their default arguments
# (their arguments, where given, are literals read as any other).
BRANCH_POINTS = {
    "relu6": 6.0,
    "hardtanh": 1.0,
    "hardsigmoid": 3.0,
    "hardswish": 3.0,
    "softplus": 20.0,
}
# Calls that read a shape: a comparison with one is about the shape, not about values.
SHAPE_READS = frozenset({"dim", "size", "numel", "len", "ndimension", "nelement"})
# Calls that branch on the values of their arguments past the first.
CLAMPS = frozenset({
    "clamp", "clamp_", "clip", "clip_", "hardtanh", "hardtanh_", "threshold", "threshold_",
    "softplus", "maximum", "minimum", "fmax", "fmin",
})  # fmt: skip
# Keywords whose value is a dim or a size.
SHAPE_KEYWORDS = frozenset(("dim", "dims", "axis", "size", "shape", "dtype", "device"))
COMPLEX_MARKS = (
    "conj",
    "view_as_real",
    "view_as_complex",
    "real",
    "imag",
    "angle",
    "conj_physical",
)


@dataclass(frozen=True)
class SourceFacts:
    """What forward's source shows: parameters used as indices, complex handling."""

    indices: frozenset[str] = field(default_factory=frozenset)
    complex: bool = False


def read_forward(
    forward: Any, parameters: tuple[str, ...], annotations: dict[str, str]
) -> SourceFacts:
    """The facts of `forward`'s source; none where there is no source to read."""
    complex_annotated = any("complex" in text.lower() for text in annotations.values())
    node = parsed_function(forward)
    if node is None:
        return SourceFacts(complex=complex_annotated)
    names = set(parameters)
    indices: set[str] = set()
    complex_used = complex_annotated
    for child in own_nodes(node):
        if isinstance(child, ast.Subscript):
            indices.update(_index_names(child.slice) & names)
        elif isinstance(child, ast.Call):
            indices.update(_index_argument(child) & names)
            if called_name(child) in COMPLEX_MARKS and _of_parameter(child, names):
                complex_used = True
        elif isinstance(child, ast.Attribute) and child.attr in ("real", "imag"):
            complex_used = complex_used or _is_name_in(child.value, names)
    # Only the subscript (w[idx], x[mask]), never the tensor indexed into; and a name must
    # look like indices or a mask, or be given to an index call, to be taken for one.
    indices = {name for name in indices if _looks_like_index(name, node)}
    return SourceFacts(frozenset(indices), complex_used)


def source_facts(target: Target) -> SourceFacts:
    """What forward's source shows of its parameters (indices, complex numbers); complex
    inputs where backward conjugates them too."""
    forward = getattr(target.obj, "forward", target.obj) if target.is_function else target.obj
    if target.op is not None:
        return SourceFacts()
    facts = read_forward(forward, tuple(target.parameters), annotations_of(target))
    backward = getattr(target.obj, "backward", None) if target.is_function else None
    if not facts.complex and conjugates_complex_inputs(backward):
        return replace(facts, complex=True)
    return facts


def _of_parameter(call: ast.Call, names: set[str]) -> bool:
    """A complex mark applied to a parameter itself (`z.conj()`, `torch.view_as_real(z)`), not
    to an intermediate (`torch.fft.ifft(...).real` of a real signal is no complex input)."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    return _is_name_in(receiver, names) or any(_is_name_in(a, names) for a in call.args)


def _is_name_in(node: ast.AST | None, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def complex_marks(function: Any) -> frozenset[str]:
    """How `function`'s own source handles complex numbers: the marks of COMPLEX_MARKS it
    calls (`conj`, `view_as_real`) or reads (`.real`, `.imag`)."""
    node = parsed_function(function) if function is not None else None
    if node is None:
        return frozenset()
    found = set()
    for child in own_nodes(node):
        if isinstance(child, ast.Call) and called_name(child) in COMPLEX_MARKS:
            found.add(called_name(child))
        elif isinstance(child, ast.Attribute) and child.attr in ("real", "imag"):
            found.add(child.attr)
    return frozenset(found)


def conjugates_complex_inputs(backward: Any) -> bool:
    """Whether a backward conjugates (`grad * w.conj()`: a gradient for complex inputs, though
    forward, `z * w`, shows nothing) without taking a real part (`.real`: the gradient of a
    real input of a complex output)."""
    marks = complex_marks(backward)
    return bool(marks & {"conj", "conj_physical"}) and not marks & {"real", "imag", "view_as_real"}


def by_name(parameter: str) -> bool:
    """A parameter named like indices, labels or a mask."""
    return bool(INDEX_NAMES.match(parameter)) or is_mask(parameter)


def is_mask(parameter: str) -> bool:
    """A parameter named like a boolean mask (`mask`, `attn_mask`, `keep_mask`)."""
    return "mask" in parameter.lower()


def _looks_like_index(name: str, node: ast.AST) -> bool:
    return by_name(name) or name in _called_with_index(node)


def _called_with_index(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            found |= _index_argument(child)
        elif isinstance(child, ast.Subscript) and isinstance(child.slice, ast.Name):
            found.add(child.slice.id)  # w[idx]: the whole subscript is one name
    return found


def _index_argument(call: ast.Call) -> set[str]:
    name = called_name(call)
    if name not in INDEX_CALLS:
        return set()
    position, keyword = INDEX_CALLS[name]
    arguments = list(call.args)
    if isinstance(call.func, ast.Attribute) and not is_module(call.func.value) and position > 0:
        position -= 1  # weight.index_select(0, idx): the tensor is the receiver
    found = _index_names(arguments[position]) if position < len(arguments) else set()
    for item in call.keywords:
        if item.arg == keyword:
            found |= _index_names(item.value)
    return found


def _index_names(node: ast.AST) -> set[str]:
    """The names an index expression takes its indices from: not those whose values a call
    turns into indices (`scores.argmax(-1)`, `torch.topk(x, 2)`: scores are floats)."""
    if isinstance(node, ast.Call) and called_name(node) in VALUES_TO_INDICES:
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    found: set[str] = set()
    for child in ast.iter_child_nodes(node):
        found |= _index_names(child)
    return found


def _names_in(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


@dataclass(frozen=True)
class BranchPoints:
    """Where `functions` branch on a value: the sizes of the number literals compared with
    (`x > 6`, `x.clamp(-3, 3)`), the branch points of torch's activations called (`F.relu6`),
    and the names compared with (`x > threshold`, `x.clamp(-ctx.qn, ctx.qp)`)."""

    magnitudes: tuple[float, ...] = ()
    names: frozenset[str] = field(default_factory=frozenset)
    # (name, text) for each string a name is compared with: `reduction == "sum"`
    strings: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # (parameter, size) for a literal a called helper compares what derives from it with
    by_input: frozenset[tuple[str, float]] = field(default_factory=frozenset)


def branch_points(*functions: Any) -> BranchPoints:
    """The branch points of `functions`' own source (functions, or their syntax trees): what
    a comparison or a clamp-like call reads (not a factor such as `2 * x`, nor dims, sizes or
    indices such as `x.sum(1) > 0`, `.view(-1, 64)`, `x[..., 2]`)."""
    found: set[float] = set()
    names: set[str] = set()
    strings: set[tuple[str, str]] = set()
    for function in functions:
        node = function if isinstance(function, FunctionNode) else parsed_function(function)
        if node is None:
            continue
        skipped = _shape_literals(node)
        for child in own_nodes(node):
            if isinstance(child, ast.Call) and called_name(child) in BRANCH_POINTS:
                found.add(BRANCH_POINTS[called_name(child)])
            if isinstance(child, ast.Compare):
                strings |= _compared_strings(child)
            for operand in _compared(child):
                for inner in ast.walk(operand):
                    if isinstance(inner, ast.Constant) and id(inner) not in skipped:
                        value = inner.value
                        if isinstance(value, int | float) and not isinstance(value, bool):
                            found.add(abs(float(value)))
                    elif isinstance(inner, ast.Name):
                        names.add(inner.id)
                    elif isinstance(inner, ast.Attribute):
                        names.add(inner.attr)
    return BranchPoints(tuple(sorted(found)), frozenset(names), frozenset(strings))


def literal_comparisons(node: FunctionNode) -> Iterator[tuple[list[ast.AST], float]]:
    """Each number literal a comparison or clamp-like call of `node` reads (as branch_points
    does), with the operands it is read among."""
    skipped = _shape_literals(node)
    for child in own_nodes(node):
        operands = _compared(child)
        for operand in operands:
            for inner in ast.walk(operand):
                value = inner.value if isinstance(inner, ast.Constant) else None
                number = isinstance(value, int | float) and not isinstance(value, bool)
                if number and id(inner) not in skipped:
                    yield operands, abs(float(value))  # type: ignore[arg-type]


def _compared_strings(compare: ast.Compare) -> set[tuple[str, str]]:
    """(name, text) for `reduction == "sum"`, `mode in ("a", "b")`, `ctx.reduction != "mean"`."""
    operands = [compare.left, *compare.comparators]
    named = {
        operand.id if isinstance(operand, ast.Name) else operand.attr
        for operand in operands
        if isinstance(operand, ast.Name | ast.Attribute)
    }
    texts = {
        inner.value
        for operand in operands
        for inner in ast.walk(operand)
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str)
    }
    return {(name, text) for name in named for text in texts}


def _compared(node: ast.AST) -> list[ast.AST]:
    """The operands `node` branches on: a comparison's sides, a clamp-like call's arguments."""
    if isinstance(node, ast.Compare):
        operands: list[ast.AST] = [node.left, *node.comparators]
        return [] if any(_about_shape(operand) for operand in operands) else operands
    if isinstance(node, ast.Call) and called_name(node) in CLAMPS:
        return [*node.args, *(keyword.value for keyword in node.keywords)]
    return []


def _about_shape(node: ast.AST) -> bool:
    """An operand that reads a shape, not a value: `x.dim()`, `x.size(0)`, `len(x)`,
    `x.shape[-1]`, `x.ndim`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and called_name(inner) in SHAPE_READS:
            return True
        if isinstance(inner, ast.Attribute) and inner.attr in ("shape", "ndim"):
            return True
    return False


def _shape_literals(node: ast.AST) -> set[int]:
    """The ids of the literals that are dims, sizes or indices rather than values."""
    skipped: set[int] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Subscript):
            skipped.update(id(inner) for inner in ast.walk(child.slice))
        elif isinstance(child, ast.Call):
            if called_name(child) in SHAPE_CALLS:  # its ints are dims, sizes or counts
                for argument in child.args:
                    skipped.update(_int_literals(argument))
            for keyword in child.keywords:
                if keyword.arg in SHAPE_KEYWORDS:
                    skipped.update(id(inner) for inner in ast.walk(keyword.value))
    return skipped


def _int_literals(node: ast.AST) -> set[int]:
    return {
        id(inner)
        for inner in ast.walk(node)
        if isinstance(inner, ast.Constant) and type(inner.value) is int
    }
