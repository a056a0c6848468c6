"""Sparse matrices forward takes: a parameter named `sparse` (`sparse_adj`, `adj_sparse`),
or one forward hands to `torch.sparse.*` or takes apart as one (`x._indices()`,
`x.coalesce()`), is a constant operand, not an input to differentiate: such Functions
(a sparse-dense product) return None for it. Inference draws it dense with
requires_grad false, which the same code accepts; it never blames backward for a gradient
nobody asked of a sparse matrix.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.contract import Contract
from gradverify.target.syntax import own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

SPARSE_NAMES = re.compile(r"^(sparse|sparse_\w+|\w+_sparse|sp_\w+)$", re.IGNORECASE)
# Methods only a sparse tensor has.
SPARSE_METHODS = frozenset({"_indices", "_values", "coalesce", "is_coalesced", "crow_indices"})


def sparse_operands(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    """A constant contract for each parameter forward takes as a sparse matrix."""

    found = {
        name: f"named {name}: a sparse matrix" for name in parameters if SPARSE_NAMES.match(name)
    }
    node = parsed_function(forward)
    for child in own_nodes(node) if node is not None else []:
        for name in _used_as_sparse(child, set(parameters)):
            found.setdefault(name, "forward uses it as a sparse matrix")
    return {name: Contract(constant=True, reasons=(reason,)) for name, reason in found.items()}


def _used_as_sparse(node: ast.AST, names: set[str]) -> set[str]:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return set()
    func = node.func
    if func.attr in SPARSE_METHODS and isinstance(func.value, ast.Name):
        return {func.value.id} & names
    if isinstance(func.value, ast.Attribute) and func.value.attr == "sparse":  # torch.sparse.mm
        return {name for a in node.args[:1] if (name := _root(a)) in names}
    return set()


def _root(node: ast.AST) -> str | None:
    """The name a chain of methods starts from: `adj` of `adj.to_sparse().coalesce()`."""
    while isinstance(node, ast.Call | ast.Attribute):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
