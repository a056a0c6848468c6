"""`structure:` in a spec: the drawn values are what it names, batched over leading dims,
and a structure that needs square matrices refuses other shapes with a clear message."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from gradverify.inputs import build_inputs
from gradverify.spec.models import Case


def drawn(structure: str, shape: list[int]) -> torch.Tensor:
    case = Case.model_validate(
        {"name": "structured", "inputs": [{"shape": shape, "structure": structure}]}
    )
    (tensor,) = build_inputs(case, 0)
    return tensor.detach()


@pytest.mark.parametrize("shape", [[3, 3], [2, 4, 4]])
def test_matrix_structures_hold(shape: list[int]) -> None:
    eye = torch.eye(shape[-1], dtype=torch.float64)

    symmetric = drawn("symmetric", shape)
    assert torch.equal(symmetric, symmetric.mT)
    spd = drawn("spd", shape)
    assert torch.linalg.eigvalsh(spd).min() > 0
    lower, upper = drawn("lower", shape), drawn("upper", shape)
    assert torch.equal(lower, lower.tril()) and torch.equal(upper, upper.triu())
    assert lower.diagonal(dim1=-2, dim2=-1).min() >= 1
    orthogonal = drawn("orthogonal", shape)
    assert torch.allclose(orthogonal.mT @ orthogonal, eye.expand_as(orthogonal), atol=1e-12)
    invertible = drawn("invertible", shape)
    assert torch.linalg.svdvals(invertible).min() > 0.5


def test_simplex_and_positive_hold_on_any_shape() -> None:
    simplex = drawn("simplex", [2, 5])
    assert simplex.min() > 0
    assert torch.allclose(simplex.sum(-1), torch.ones(2, dtype=torch.float64))
    assert drawn("positive", [7]).min() >= 0.1


def test_a_matrix_structure_on_a_non_square_shape_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="needs square matrices"):
        drawn("spd", [2, 3])


def test_the_same_seed_draws_the_same_structured_values() -> None:
    assert torch.equal(drawn("spd", [3, 3]), drawn("spd", [3, 3]))
