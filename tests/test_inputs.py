"""build_inputs: seeded tensors and literals for a case, never touching the global RNG."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from gradverify.inputs import (
    DeviceUnavailable,
    build_inputs,
    case_seed,
    differentiable_indices,
    fresh_copies,
    promoted_arguments,
)
from gradverify.spec.models import Case


def case(*inputs: Any, name: str = "case") -> Case:
    return Case(name=name, inputs=list(inputs))


def one_tensor(tensor_spec: dict[str, Any], seed: int = 0) -> torch.Tensor:
    (tensor,) = build_inputs(case(tensor_spec), seed)
    assert isinstance(tensor, torch.Tensor)
    return tensor


MIXED = case(
    {"shape": [3, 4]}, {"shape": [2], "dtype": "float32"}, {"shape": [5], "dtype": "int64"}
)


def test_same_seed_gives_identical_tensors() -> None:
    first = build_inputs(MIXED, seed=3)
    second = build_inputs(MIXED, seed=3)

    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)


def test_different_seeds_give_different_tensors() -> None:
    first = build_inputs(MIXED, seed=0)
    second = build_inputs(MIXED, seed=1)

    assert not torch.equal(first[0], second[0])
    assert not torch.equal(first[1], second[1])


def test_arguments_of_one_case_differ_from_each_other() -> None:
    first, second = build_inputs(case({"shape": [6]}, {"shape": [6]}), 0)

    assert not torch.equal(first, second)


def test_global_rng_state_is_untouched() -> None:
    before = torch.get_rng_state()

    build_inputs(MIXED, seed=5)

    assert torch.equal(torch.get_rng_state(), before)


def test_global_random_sequence_is_unaffected() -> None:
    with torch.random.fork_rng():  # leave the global RNG as other tests found it
        torch.manual_seed(1234)
        expected = [torch.rand(1).item() for _ in range(3)]

        torch.manual_seed(1234)
        drawn = [torch.rand(1).item()]
        build_inputs(MIXED, seed=0)
        drawn += [torch.rand(1).item()]
        build_inputs(MIXED, seed=1)
        drawn += [torch.rand(1).item()]

    assert drawn == expected


def test_case_seed_depends_on_the_name_not_the_position() -> None:
    alone = case({"shape": [4]}, name="vector")
    other = case({"shape": [4]}, name="other")

    first_alone = build_inputs(alone, 0)[0]
    # The same case after another one, as if a case had been added above it.
    first_after = [build_inputs(c, 0)[0] for c in (other, alone)][1]

    assert torch.equal(first_alone, first_after)
    assert case_seed(0, "vector") == case_seed(0, "vector")
    assert case_seed(0, "vector") != case_seed(0, "other")
    assert case_seed(0, "vector") != case_seed(1, "vector")


def test_case_seed_is_stable_across_processes() -> None:
    # Not hash(), which changes per process: the same spec must draw the same tensors on every
    # run and every machine. These numbers are a contract; changing them changes every input.
    assert case_seed(0, "vector") == 460212315
    assert case_seed(7, "vector") == 460212315 + 7 * 1_000_003


def test_float64_defaults_require_grad() -> None:
    tensor = one_tensor({"shape": [2, 3]})

    assert tensor.dtype == torch.float64
    assert tensor.shape == (2, 3)
    assert tensor.requires_grad
    assert tensor.is_leaf
    assert tensor.device.type == "cpu"


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("float32", torch.float32),
        ("float", torch.float32),
        ("double", torch.float64),
        ("half", torch.float16),
        ("bfloat16", torch.bfloat16),
        ("torch.float64", torch.float64),
    ],
)
def test_floating_dtypes_and_aliases(dtype: str, expected: torch.dtype) -> None:
    tensor = one_tensor({"shape": [3], "dtype": dtype})

    assert tensor.dtype == expected
    assert tensor.requires_grad


def test_requires_grad_false_is_respected() -> None:
    assert not one_tensor({"shape": [3], "requires_grad": False}).requires_grad


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [("int64", torch.int64), ("long", torch.int64), ("int", torch.int32), ("uint8", torch.uint8)],
)
def test_integer_tensors_do_not_require_grad(dtype: str, expected: torch.dtype) -> None:
    tensor = one_tensor({"shape": [50], "dtype": dtype})

    assert tensor.dtype == expected
    assert not tensor.requires_grad


def test_integers_cover_low_to_high_inclusive() -> None:
    tensor = one_tensor({"shape": [400], "dtype": "int64", "low": -2, "high": 3})

    assert set(tensor.tolist()) == {-2, -1, 0, 1, 2, 3}


def test_unsigned_integers_with_the_default_range_stay_in_bounds() -> None:
    tensor = one_tensor({"shape": [200], "dtype": "uint8"})

    assert set(tensor.tolist()) == {0, 1}


def test_bool_tensor() -> None:
    tensor = one_tensor({"shape": [200], "dtype": "bool"})

    assert tensor.dtype == torch.bool
    assert not tensor.requires_grad
    assert set(tensor.tolist()) == {True, False}


def test_floats_lie_within_low_and_high() -> None:
    tensor = one_tensor({"shape": [1000], "low": 2.0, "high": 2.5})

    assert tensor.min().item() >= 2.0
    assert tensor.max().item() < 2.5
    # Spread over the range, not stuck at one end.
    assert tensor.min().item() < 2.05
    assert tensor.max().item() > 2.45


def test_float32_is_drawn_within_the_range_too() -> None:
    tensor = one_tensor({"shape": [500], "dtype": "float32", "low": -5.0, "high": -4.0})

    assert tensor.min().item() >= -5.0
    assert tensor.max().item() <= -4.0


@pytest.mark.parametrize(
    ("dtype", "expected"), [("complex128", torch.complex128), ("cfloat", torch.complex64)]
)
def test_complex_tensors(dtype: str, expected: torch.dtype) -> None:
    tensor = one_tensor({"shape": [300], "dtype": dtype, "low": 0.0, "high": 1.0})

    assert tensor.dtype == expected
    assert tensor.requires_grad
    for part in (tensor.real, tensor.imag):
        assert part.min().item() >= 0.0
        assert part.max().item() < 1.0
    assert not torch.equal(tensor.real, tensor.imag)


def test_values_are_used_exactly() -> None:
    tensor = one_tensor({"values": [[0.1, -2.5], [3.0, 1e-7]]})

    assert tensor.dtype == torch.float64
    assert tensor.tolist() == [[0.1, -2.5], [3.0, 1e-7]]
    assert tensor.requires_grad


def test_values_do_not_depend_on_the_seed() -> None:
    spec = {"values": [1.0, 2.0, 3.0], "dtype": "float32"}

    assert torch.equal(one_tensor(spec, seed=0), one_tensor(spec, seed=99))


def test_integer_values() -> None:
    tensor = one_tensor({"values": [[1, 2], [3, 4]], "dtype": "int64"})

    assert tensor.dtype == torch.int64
    assert tensor.tolist() == [[1, 2], [3, 4]]
    assert not tensor.requires_grad


def test_empty_shape_gives_an_empty_tensor() -> None:
    assert one_tensor({"shape": [0, 3]}).shape == (0, 3)


def test_scalar_shape_gives_a_zero_dimensional_tensor() -> None:
    assert one_tensor({"shape": []}).dim() == 0


def test_literals_are_passed_as_written_in_order() -> None:
    arguments = build_inputs(
        case({"shape": [2]}, 3, 2.5, "mean", None, [1, 2], {"value": {"a": 1}}, True), 0
    )

    assert isinstance(arguments[0], torch.Tensor)
    assert arguments[1:] == (3, 2.5, "mean", None, [1, 2], {"a": 1}, True)


def test_case_without_inputs_has_no_arguments() -> None:
    assert build_inputs(case(), 0) == ()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_raises_device_unavailable() -> None:
    with pytest.raises(DeviceUnavailable) as caught:
        build_inputs(case({"shape": [2], "device": "cuda:0"}), 0)

    assert caught.value.device == "cuda:0"
    assert "'cuda:0' is not available" in str(caught.value)


def test_meta_device_needs_no_hardware() -> None:
    tensor = one_tensor({"shape": [2, 2], "device": "meta"})

    assert tensor.device.type == "meta"
    assert tensor.shape == (2, 2)


def test_differentiable_indices() -> None:
    arguments = build_inputs(
        case({"shape": [2]}, 2.0, {"shape": [2], "dtype": "int64"}, {"shape": [2]}), 0
    )

    assert differentiable_indices(arguments) == [0, 3]


def test_fresh_copies_promotes_floats_but_not_ints() -> None:
    arguments = build_inputs(
        case(
            {"shape": [3], "dtype": "float32"},
            {"shape": [3], "dtype": "int64"},
            {"shape": [3], "dtype": "complex64"},
            {"shape": [3], "dtype": "float32", "requires_grad": False},
            0.5,
        ),
        0,
    )

    copies = fresh_copies(arguments, torch.float64)

    assert [getattr(copy, "dtype", None) for copy in copies] == [
        torch.float64,
        torch.int64,
        torch.complex128,
        torch.float64,
        None,
    ]
    assert [getattr(copy, "requires_grad", None) for copy in copies] == [
        True,
        False,
        True,
        False,
        None,
    ]
    assert copies[4] == 0.5
    assert torch.equal(copies[0], arguments[0].detach().double())
    assert torch.equal(copies[1], arguments[1])


def test_fresh_copies_are_new_leaves_sharing_no_storage() -> None:
    arguments = build_inputs(case({"shape": [3]}), 0)

    (copy,) = fresh_copies(arguments)

    assert copy is not arguments[0]
    assert copy.is_leaf and copy.requires_grad
    assert copy.dtype == torch.float64
    with torch.no_grad():
        copy.add_(1.0)
    assert not torch.equal(copy, arguments[0])


def test_promoted_arguments_lists_lower_precision_differentiable_tensors() -> None:
    arguments = build_inputs(
        case(
            {"shape": [2], "dtype": "float32"},
            {"shape": [2]},
            {"shape": [2], "dtype": "int32"},
            {"shape": [2], "dtype": "complex64"},
        ),
        0,
    )

    assert promoted_arguments(arguments) == [(0, torch.float32), (3, torch.complex64)]
