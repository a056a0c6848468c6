"""Arguments for a case: seeded tensors and literals, never touching the global RNG."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import torch

from gradverify.errors import GradverifyError, TargetError
from gradverify.spec.models import CallableInput, Case, LiteralInput, TensorInput
from gradverify.target.loading import load_object

_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
    "short": "int16",
    "int": "int32",
    "long": "int64",
}


class DeviceUnavailable(Exception):
    """The case asks for a device this machine does not have."""

    def __init__(self, device: str) -> None:
        self.device = device
        super().__init__(f"device {device!r} is not available on this machine")


def torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, _ALIASES.get(name, name))
    assert isinstance(dtype, torch.dtype), name
    return dtype


def case_seed(seed: int, case_name: str) -> int:
    """A per-case seed that does not change when other cases are added or reordered."""
    return (seed * 1_000_003 + zlib.crc32(case_name.encode())) % (2**63)


# Known kinks (`kinks:` in a spec) are kept this many eps away from generated values.
KINK_MARGIN_EPS = 10.0
MAX_REDRAWS = 10


def build_inputs(
    case: Case, seed: int, kinks: Sequence[float] = (), margin: float = 0.0
) -> tuple[Any, ...]:
    """The positional arguments of `case`, drawn from a generator seeded by `seed`.

    Generated floating values within `margin` of a known kink are drawn again; explicit
    `values` are never changed.
    """
    generator = torch.Generator(device="cpu").manual_seed(case_seed(seed, case.name))
    arguments: list[Any] = []
    for index, item in enumerate(case.inputs):
        if isinstance(item, TensorInput):
            tensor = _tensor(item, generator)
            if (
                kinks
                and item.values is None
                and item.structure is None
                and tensor.is_floating_point()
            ):
                tensor = _away_from(tensor, item, kinks, margin, generator)
            arguments.append(tensor)
        elif isinstance(item, LiteralInput):
            arguments.append(item.value)
        elif isinstance(item, CallableInput):
            arguments.append(imported(item.callable, f"inputs[{index}]"))
        else:
            arguments.append(item)
    return tuple(arguments)


def _tensor(spec: TensorInput, generator: torch.Generator) -> torch.Tensor:
    require_device(spec.device)
    dtype = torch_dtype(spec.dtype)
    if spec.values is not None:
        tensor = torch.tensor(spec.values, dtype=dtype, device="cpu")
    else:
        tensor = _random(spec.dims, dtype, spec.low, spec.high, generator)
        if spec.structure is not None:
            tensor = structured(tensor, spec.structure)
    tensor = tensor.to(spec.device)
    return tensor.requires_grad_(spec.wants_grad)


def imported(path: str, key: str = "callable") -> Any:
    """The object a `module:attr` path names (`torch:sin`, `torch.nn.functional:softplus`);
    a path that does not import is the spec's error at `key` (CallableNotFound), never ours."""
    try:
        return load_object(path)
    except TargetError as error:
        message = f"{key}: {{callable: {path}}} cannot be imported: {error.message}"
        raise CallableNotFound(message) from None


def structured(drawn: torch.Tensor, structure: str) -> torch.Tensor:
    """Uniform values `drawn` made into `structure`, batched over leading dims: symmetric
    ((A + Aᵀ) / 2), spd (A Aᵀ + n I), lower/upper (a triangle, its diagonal 1 + |a|),
    orthogonal (Q of A's QR, signs fixed), invertible (A + n I), simplex (softmax of the last
    dim), positive (|a| + 0.1)."""
    if structure == "simplex":
        return drawn.softmax(-1)
    if structure == "positive":
        return drawn.abs() + 0.1
    size = drawn.shape[-1]
    eye = torch.eye(size, dtype=drawn.dtype, device=drawn.device)
    transposed = drawn.mT.conj() if drawn.is_complex() else drawn.mT
    if structure == "symmetric":
        return (drawn + transposed) / 2
    if structure == "spd":
        return drawn @ transposed + size * eye
    if structure == "invertible":
        return drawn + size * eye
    if structure == "orthogonal":
        q, r = torch.linalg.qr(drawn)
        return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
    triangle = drawn.tril() if structure == "lower" else drawn.triu()
    diagonal = drawn.diagonal(dim1=-2, dim2=-1).abs() + 1
    return triangle - triangle.diagonal(dim1=-2, dim2=-1).diag_embed() + diagonal.diag_embed()


def _away_from(
    tensor: torch.Tensor,
    spec: TensorInput,
    kinks: Sequence[float],
    margin: float,
    generator: torch.Generator,
) -> torch.Tensor:
    values = tensor.detach().clone()
    for _ in range(MAX_REDRAWS):
        near = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
        for kink in kinks:
            near |= (values.to(torch.float64) - kink).abs() < margin
        if not near.any():
            break
        fresh = redraw_values(values, spec.low, spec.high, generator)
        values = torch.where(near, fresh, values)
    return values.requires_grad_(tensor.requires_grad)


def redraw_values(
    like: torch.Tensor, low: float, high: float, generator: torch.Generator
) -> torch.Tensor:
    """Fresh uniform values shaped and typed like `like` (floating dtypes), on its device."""
    return _random(like.shape, like.dtype, low, high, generator).to(like.device)


def _random(
    shape: Sequence[int], dtype: torch.dtype, low: float, high: float, generator: torch.Generator
) -> torch.Tensor:
    # Drawn on the CPU generator whatever the case's device, so that one seed gives the same
    # values on every device (a case on CUDA checks the values its CPU twin checks).
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator, device="cpu") < 0.5
    if not (dtype.is_floating_point or dtype.is_complex):
        # Integers from low to high inclusive, within what the dtype holds (the default
        # low of -1 would be out of bounds for uint8).
        info = torch.iinfo(dtype)
        low_int, high_int = max(int(low), info.min), min(int(high), info.max - 1)
        return torch.randint(
            low_int, high_int + 1, tuple(shape), generator=generator, dtype=dtype, device="cpu"
        )

    def uniform() -> torch.Tensor:
        drawn = torch.rand(shape, generator=generator, dtype=torch.float64, device="cpu")
        return drawn * (high - low) + low

    if dtype.is_complex:
        return torch.complex(uniform(), uniform()).to(dtype)
    return uniform().to(dtype)


class CallableNotFound(GradverifyError):
    """A `{callable: module:attr}` input that does not import."""


class NoSuchDevice(GradverifyError):
    """A device numbered beyond those this machine has (`cuda:3` on a one-GPU machine): a
    usage error, not a skip, since no machine of this kind would run it as written."""

    def __init__(self, device: str, present: Sequence[str]) -> None:
        self.device = device
        there = ", ".join(present) if present else "none"
        super().__init__(f"device {device!r} does not exist: this machine has {there}")


def require_device(device: str) -> None:
    """DeviceUnavailable where this machine has no device of that kind (its cases are
    skipped); NoSuchDevice where it has some, but not the one numbered.

    Only asks torch about a kind that is not the CPU: asking about CUDA loads its driver."""
    kind, _, number = device.partition(":")
    if kind == "cpu" or kind == "meta":
        return
    module: Any = getattr(torch, kind, None)
    if module is None or not hasattr(module, "is_available") or not module.is_available():
        raise DeviceUnavailable(device)
    count = int(module.device_count()) if hasattr(module, "device_count") else 1
    if number and (not number.isdigit() or int(number) >= count):
        raise NoSuchDevice(device, [_device_name(module, kind, index) for index in range(count)])


def _device_name(module: Any, kind: str, index: int) -> str:
    named = getattr(module, "get_device_name", None)
    return f"{kind}:{index} ({named(index)})" if named is not None else f"{kind}:{index}"


def differentiable_indices(arguments: Sequence[Any]) -> list[int]:
    """Positions of the tensor arguments that require grad."""
    return [
        index
        for index, argument in enumerate(arguments)
        if isinstance(argument, torch.Tensor) and argument.requires_grad
    ]


def fresh_copies(arguments: Sequence[Any], dtype: torch.dtype | None = None) -> tuple[Any, ...]:
    """New leaf tensors with the same values and requires_grad; literals as they are.

    With `dtype`, floating arguments are cast to it (complex ones to its complex twin).
    """
    copies: list[Any] = []
    for argument in arguments:
        if not isinstance(argument, torch.Tensor):
            copies.append(argument)
            continue
        copy = argument.detach().clone()
        if dtype is not None and copy.is_floating_point():
            copy = copy.to(dtype)
        elif dtype is not None and copy.is_complex():
            copy = copy.to(torch.complex128 if dtype == torch.float64 else torch.complex64)
        copies.append(copy.requires_grad_(argument.requires_grad))
    return tuple(copies)


def promoted_arguments(arguments: Sequence[Any]) -> list[tuple[int, torch.dtype]]:
    """Arguments (index, declared dtype) that a float64 check promotes."""
    return [
        (index, argument.dtype)
        for index, argument in enumerate(arguments)
        if isinstance(argument, torch.Tensor)
        and argument.requires_grad
        and argument.dtype not in (torch.float64, torch.complex128)
    ]
