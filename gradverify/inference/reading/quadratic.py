"""Matrices forward reads in a quadratic form: `(x * (x @ M)).sum(-2)`, the diagonal of
xᵀ M x, depends only on M's symmetric part, so a backward may rely on the symmetry (2 M x
for (M + Mᵀ) x) and be right for every M the package passes. Inference draws such an M
symmetric, beside a plain twin whose failures become a warning naming the structure.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.contract import Contract
from gradverify.target.syntax import own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


def quadratic_forms(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    """A symmetric contract for each parameter forward reads in a quadratic form."""
    node = parsed_function(forward)
    if node is None:
        return {}
    found: dict[str, Contract] = {}
    for child in own_nodes(node):
        name = _quadratic(child, set(parameters))
        if name is not None:
            reason = f"forward reads {name} in a quadratic form (x * (x @ {name}))"
            found[name] = Contract(structure="symmetric", reasons=(reason,))
    return found


def _quadratic(node: ast.AST, names: set[str]) -> str | None:
    """The parameter M of `x * (x @ M)` or `(M @ x) * x` (either side), else None."""
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
        return None
    for product, other in ((node.left, node.right), (node.right, node.left)):
        if not isinstance(product, ast.BinOp) or not isinstance(product.op, ast.MatMult):
            continue
        for matrix, vector in ((product.right, product.left), (product.left, product.right)):
            if (
                isinstance(matrix, ast.Name)
                and matrix.id in names
                and ast.dump(vector) == ast.dump(other)
            ):
                return matrix.id
    return None
