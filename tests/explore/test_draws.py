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


def test_every_draw_keeps_dtype_shape_range_and_literals():
    for draw in draws(CASE, SPEC, seed=0, count=12, inferred=False):
        x, y, values, indices, literal = draw.arguments
        assert x.shape == (4, 3) and x.dtype == torch.float64 and x.requires_grad
        assert float(x.detach().min()) >= -3 and float(x.detach().max()) <= 2
        assert y.shape == (3,) and y.dtype == torch.float32
        assert values.tolist() == [1.5, 2.5, 3.5]
        assert indices.dtype == torch.int64 and not indices.requires_grad
        assert int(indices.min()) >= 0 and int(indices.max()) <= 4
        assert literal == 7


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
