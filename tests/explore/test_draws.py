"""Explored draws stay within the case's declared domain, and vary what the brief says."""

from __future__ import annotations

import torch

from gradverify.engine.explore.draws import EDGES, SHAPE, TIES, draws
from gradverify.spec.models import FunctionSpec

SPEC = FunctionSpec.model_validate(
    {
        "target": "tests.functions.correct:Mul",
        "cases": [
            {
                "name": "mixed",
                "inputs": [
                    {"shape": [4, 3], "low": -3, "high": 2},
                    {"shape": [3], "dtype": "float32"},
                    {"values": [1.5, 2.5, 3.5]},
                    {"shape": [5], "dtype": "int64", "low": 0, "high": 4},
                    7,
                ],
            }
        ],
    }
)
CASE = SPEC.cases[0]


def test_every_draw_keeps_dtype_shape_range_and_values():
    for draw in draws(CASE, SPEC, seed=0, count=12, inferred=False):
        x, y, values, indices, literal = draw.arguments
        assert x.shape == (4, 3) and x.dtype == torch.float64 and x.requires_grad
        assert float(x.detach().min()) >= -3 and float(x.detach().max()) <= 2
        assert y.shape == (3,) and y.dtype == torch.float32
        assert values.tolist() == [1.5, 2.5, 3.5]
        assert indices.dtype == torch.int64 and not indices.requires_grad
        assert int(indices.min()) >= 0 and int(indices.max()) <= 4
        assert type(literal) is int and literal > 0  # a number varies, keeping its sign
        assert draw.case.inputs[4] == literal  # the case it stands for says which


def test_two_draws_in_three_vary_the_numbers_and_the_third_keeps_them():
    numbers = [draw.arguments[4] for draw in draws(CASE, SPEC, seed=0, count=12, inferred=False)]
    assert [n == 7 for n in numbers] == [False, False, True] * 4
    assert set(numbers) - {7} <= {6, 8, 14}


NUMBERS = FunctionSpec.model_validate(
    {
        "target": "tests.functions.correct:Mul",
        "cases": [
            {
                "name": "numbers",
                "inputs": [
                    {"shape": [3]},
                    2.5,  # an exponent above 1
                    {"value": 0.1},  # a probability
                    -1,  # a dim from the end
                    True,
                    0.0,  # often "off"
                    "sum",
                ],
            }
        ],
    }
)


def test_numbers_vary_on_their_side_of_0_and_1_and_bools_flip():
    varied = [d for d in draws(NUMBERS.cases[0], NUMBERS, 0, 30, False) if d.other_numbers]
    assert varied
    for draw in varied:
        _, power, probability, dim, flag, off, word = draw.arguments
        assert power > 1 and power != 2.5
        assert 0 < probability < 1 and probability != 0.1
        assert dim < 0 and dim != -1
        assert flag is False
        assert off == 0.0 and word == "sum"
        assert "other numbers" in draw.label
    assert len({draw.arguments[1] for draw in varied}) > 3  # not one other value


def test_edge_values_and_ties():
    kinds = {draw.kind: draw for draw in draws(CASE, SPEC, seed=0, count=4, inferred=False)}
    edges = kinds[EDGES].arguments[0].detach()
    assert (edges == 0).any()
    assert (edges < -2.99).any() or (edges > 1.99).any()
    ties = kinds[TIES].arguments[0].detach()
    assert ties.unique().numel() <= 2 < ties.numel()
    assert SHAPE not in kinds  # a spec's shapes are declared: kept


def test_an_inferred_target_gets_other_shapes_of_the_same_rank():
    shapes = [
        draw.case.inputs[0].shape
        for draw in draws(CASE, SPEC, seed=0, count=20, inferred=True)
        if draw.kind == SHAPE
    ]
    assert shapes and all(len(shape) == 2 for shape in shapes)
    assert any(shape != [4, 3] for shape in shapes)
    for draw in draws(CASE, SPEC, seed=0, count=20, inferred=True):
        if draw.kind == SHAPE:  # a size two inputs share stays shared
            assert draw.arguments[0].shape[1] == draw.arguments[1].shape[0]


def test_a_structured_tensor_keeps_its_structure_in_every_draw():
    spec = FunctionSpec.model_validate(
        {
            "target": "tests.functions.correct:Mul",
            "cases": [{"name": "spd", "inputs": [{"shape": [3, 3], "structure": "spd"}]}],
        }
    )
    for draw in draws(spec.cases[0], spec, seed=0, count=8, inferred=False):
        matrix = draw.arguments[0].detach()
        assert torch.allclose(matrix, matrix.T)  # edge values, ties, signs would break it
        assert bool((torch.linalg.eigvalsh(matrix) > 0).all())
