"""The spec format as pydantic models: a public contract, documented in docs/spec.md.

Nothing here imports torch: validating a spec must stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from gradverify.catalogue import CATALOGUE
from gradverify.spec.targets import form_problem

# A check id, as the catalogue lists them (a Literal, so that the schema and validation
# name every id; mypy sees a plain str, the Literal being built from the catalogue).
if TYPE_CHECKING:
    CheckId = str
else:
    CheckId = Literal[tuple(entry.id for entry in CATALOGUE)]
# Every check id, in the order checks run.
CHECK_IDS: tuple[CheckId, ...] = tuple(entry.id for entry in CATALOGUE)
# The checks that need a spec key to mean anything, and run by default only when it is given.
CONFIGURED_CHECKS: dict[str, str] = {
    "reference": "reference",
    "expected_gradient": "expected_gradient",
}
# Checks that run only when asked for (`checks:`, `extra_checks:`, or `extra_checks` in
# [tool.gradverify]): each would add more than a fifth to a default run (docs/benchmarks.md).
# `compile` runs by default for custom-op targets all the same, which exist for torch.compile.
OPT_IN_CHECKS: frozenset[str] = frozenset({"compile"})
GradientMode = Literal["exact", "surrogate", "approximate"]

# torch dtype names (and their aliases) accepted in a spec, checked without importing torch.
FLOATING_DTYPES = frozenset(
    {"float16", "half", "bfloat16", "float32", "float", "float64", "double"}
)
COMPLEX_DTYPES = frozenset({"complex32", "chalf", "complex64", "cfloat", "complex128", "cdouble"})
INTEGER_DTYPES = frozenset(
    {
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "short",
        "int32",
        "int",
        "int64",
        "long",
    }
)
DTYPE_NAMES = FLOATING_DTYPES | COMPLEX_DTYPES | INTEGER_DTYPES | {"bool"}
# What a tensor's drawn values are made into (`structure:`); the first six need square
# last two dims, `simplex` sums to 1 along the last dim, `positive` stays above 0.
Structure = Literal[
    "symmetric", "spd", "lower", "upper", "orthogonal", "invertible", "simplex", "positive"
]
MATRIX_STRUCTURES = frozenset({"symmetric", "spd", "lower", "upper", "orthogonal", "invertible"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(_Strict):
    """Finite-difference step and comparison tolerances: |analytical - numerical| <= atol + rtol*|numerical|."""

    eps: float = Field(1e-6, gt=0)
    atol: float = Field(1e-5, ge=0)
    rtol: float = Field(1e-3, ge=0)
    nondet_tol: float = Field(0.0, ge=0)


def _dims(values: Any) -> list[int]:
    """The shape of a nested list, or ValueError if it is ragged or holds non-numbers."""
    if isinstance(values, bool | int | float):
        return []
    if not isinstance(values, list):
        raise ValueError(f"`values` must hold numbers or nested lists of numbers, not {values!r}")
    if not values:
        return [0]
    inner = [_dims(item) for item in values]
    if any(shape != inner[0] for shape in inner):
        raise ValueError("`values` is ragged: every row must have the same length")
    return [len(values), *inner[0]]


class TensorInput(_Strict):
    """A tensor argument: random (`shape`) or explicit (`values`)."""

    shape: list[Annotated[int, Field(ge=0)]] | None = None
    values: Any = None
    dtype: str = "float64"
    low: float = -1.0
    high: float = 1.0
    requires_grad: bool | None = None  # default: true for floating and complex dtypes
    device: str = "cpu"
    structure: Structure | None = None  # drawn values made symmetric, SPD, triangular, ...

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, dtype: str) -> str:
        name = dtype.removeprefix("torch.")
        if name not in DTYPE_NAMES:
            from gradverify.spec.suggest import did_you_mean

            raise ValueError(f"unknown dtype {dtype!r}{did_you_mean(name, DTYPE_NAMES)}")
        return name

    @field_validator("device")
    @classmethod
    def _known_device(cls, device: str) -> str:
        return known_device(device)

    @model_validator(mode="after")
    def _shape_or_values(self) -> TensorInput:
        if (self.shape is None) == (self.values is None):
            raise ValueError("a tensor input needs exactly one of `shape` or `values`")
        if self.values is not None:
            _dims(self.values)
        if self.low >= self.high:
            raise ValueError(f"`low` ({self.low}) must be less than `high` ({self.high})")
        if self.requires_grad and not self.is_differentiable_dtype:
            raise ValueError(
                f"requires_grad is only possible for floating or complex dtypes, not {self.dtype}"
            )
        self._structure_fits()
        return self

    def _structure_fits(self) -> None:
        if self.structure is None:
            return
        if self.values is not None or not self.is_differentiable_dtype:
            raise ValueError("`structure` shapes drawn floating values: give `shape`, not `values`")
        dims = self.dims
        if self.structure in MATRIX_STRUCTURES and (len(dims) < 2 or dims[-1] != dims[-2]):
            raise ValueError(
                f"structure {self.structure!r} needs square matrices (shape [..., n, n]), "
                f"not {dims}"
            )

    @property
    def is_differentiable_dtype(self) -> bool:
        return self.dtype in FLOATING_DTYPES or self.dtype in COMPLEX_DTYPES

    @property
    def wants_grad(self) -> bool:
        return self.is_differentiable_dtype if self.requires_grad is None else self.requires_grad

    @property
    def dims(self) -> list[int]:
        return list(self.shape) if self.shape is not None else _dims(self.values)


class LiteralInput(_Strict):
    """A literal written as `{value: ...}` (the way to pass a mapping as it is)."""

    value: Any


class CallableInput(_Strict):
    """A callable written as `{callable: module:attr}` (`torch:sin`), imported when the case
    is built: for a Function that takes a function (`fn`, `func`, `callback`)."""

    callable: str

    @field_validator("callable")
    @classmethod
    def _import_form(cls, value: str) -> str:
        return _import_path(value, "callable") or value


DEVICE_KINDS = frozenset({"cpu", "cuda", "mps", "xpu", "meta"})


def known_device(device: str) -> str:
    """`device` if it names a device kind torch knows, else ValueError."""
    if device.split(":", 1)[0] not in DEVICE_KINDS:
        raise ValueError(f"unknown device {device!r}; use cpu or cuda (optionally cuda:N)")
    return device


def _input_kind(raw: Any) -> str:
    if isinstance(raw, TensorInput):
        return "tensor"
    if isinstance(raw, LiteralInput):
        return "literal"
    if isinstance(raw, CallableInput):
        return "callable"
    if isinstance(raw, dict):
        # `{value: ...}` is a literal; any other mapping is meant as a tensor, so that
        # a misspelt `shape` is reported against the tensor keys.
        if set(raw) == {"callable"}:
            return "callable"
        return "literal" if set(raw) == {"value"} else "tensor"
    return "plain"


# Tags that pydantic inserts into error locations; they are not keys of the YAML.
INPUT_TAGS = frozenset({"tensor", "literal", "callable", "plain"})

Input = Annotated[
    Annotated[TensorInput, Tag("tensor")]
    | Annotated[LiteralInput, Tag("literal")]
    | Annotated[CallableInput, Tag("callable")]
    | Annotated[Any, Tag("plain")],
    Discriminator(_input_kind),
]


def _case_on(case: Any, device: str) -> Any:
    """A raw case (as read) whose tensor inputs without a `device` key are given `device`."""
    inputs = case.get("inputs") if isinstance(case, dict) else None
    if not isinstance(inputs, list):
        return case
    placed = [
        {**item, "device": device}
        if isinstance(item, dict) and _input_kind(item) == "tensor" and "device" not in item
        else item
        for item in inputs
    ]
    return {**case, "inputs": placed}


class Case(_Strict):
    """One set of inputs for the target, passed positionally to forward."""

    name: str
    inputs: list[Input] = Field(default_factory=list)


def _case_placed(case: Case, device: str, unnamed_only: bool) -> Case:
    """`case` with its tensor inputs on `device` (those naming none, with `unnamed_only`)."""
    inputs = [
        item.model_copy(update={"device": device})
        if isinstance(item, TensorInput)
        and not (unnamed_only and "device" in item.model_fields_set)
        else item
        for item in case.inputs
    ]
    return case.model_copy(update={"inputs": inputs})


class LowPrecision(_Strict):
    """How a Function run in a low dtype is judged against a float64 reference.

    Its error must be at most `k` times the error of the reference itself run in the same
    low dtype, plus a rounding floor of `floor_ulps` units in the last place of that dtype.
    """

    k: float = Field(2.0, gt=0)
    floor_ulps: float = Field(4.0, ge=0)


class Variants(_Strict):
    """Extra layouts each case is also tried in (check `layouts`)."""

    non_contiguous: bool = True  # tensor arguments of rank >= 2 with other strides
    requires_grad_off: bool = True  # each argument in turn with requires_grad off


def _import_path(value: str | None, key: str) -> str | None:
    if value is not None and (":" not in value or value.endswith(":") or value.startswith(":")):
        raise ValueError(
            f"{key} {value!r} must look like `package.module:Attr` or `path/file.py:Attr`"
        )
    return value


class FunctionSpec(_Strict):
    """How to verify one Function: its target, checks, tolerances and cases."""

    target: str | None = None
    gradient: GradientMode = "exact"
    expected_gradient: str | None = None  # surrogate: module:callable giving the intended gradient
    max_error: float | None = Field(
        default=None, gt=0
    )  # approximate: the gradient's largest allowed error
    samples: int | None = Field(
        default=None, ge=1, le=10_000
    )  # approximate: backward runs whose mean is compared (a stochastic estimator)
    reference: str | None = None  # module:callable, a plain PyTorch forward to compare with
    low_precision: LowPrecision = Field(default_factory=LowPrecision)  # type: ignore[arg-type]
    kinks: list[float] = Field(default_factory=list)  # known non-differentiable input values
    variants: Variants = Field(default_factory=Variants)
    # layouts warns (once per Function) when backward computes a gradient it need not.
    wasted_work: bool = True
    mode: Literal["full", "randomized", "auto"] = "auto"  # full Jacobians, or random projections
    # seconds per case, in a worker process; finite: a deadline of inf overflows select()
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    checks: list[CheckId] | None = Field(default=None, min_length=1)
    extra_checks: list[CheckId] = Field(default_factory=list)  # run besides the default ones
    tolerance: Tolerance = Field(default_factory=Tolerance)  # type: ignore[arg-type]
    seed: int = 0
    # further draws per case searching for an input that fails (gradverify.engine.explore);
    # None: the default (up to 20 within a share of the case's time); 0: off
    explore: int | None = Field(default=None, ge=0, le=10_000)
    # the device of every tensor input that names none (default: each input's own, the CPU)
    device: str | None = None
    cases: list[Case] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _device_of_inputs(cls, data: Any) -> Any:
        """A top-level `device:` given to every tensor input that names no device of its own."""
        if not isinstance(data, dict):
            return data
        device, cases = data.get("device"), data.get("cases")
        if not isinstance(device, str) or device.split(":", 1)[0] not in DEVICE_KINDS:
            return data  # none, or one that the field's validation reports
        if not isinstance(cases, list):
            return data
        return {**data, "cases": [_case_on(case, device) for case in cases]}

    @field_validator("device")
    @classmethod
    def _known_device(cls, device: str | None) -> str | None:
        return None if device is None else known_device(device)

    def on_device(self, device: str) -> FunctionSpec:
        """This spec with every tensor input on `device` (`--device`)."""
        cases = [_case_placed(case, device, unnamed_only=False) for case in self.cases]
        return self.model_copy(update={"device": device, "cases": cases})

    def by_default_on(self, device: str) -> FunctionSpec:
        """This spec with `device` for the tensor inputs that name no device and where the
        spec sets none at the top (`device =` in [tool.gradverify])."""
        if "device" in self.model_fields_set:
            return self
        cases = [_case_placed(case, device, unnamed_only=True) for case in self.cases]
        return self.model_copy(update={"cases": cases})

    @field_validator("target")
    @classmethod
    def _target_form(cls, target: str | None) -> str | None:
        problem = form_problem(target) if target is not None else None
        if problem is not None:  # the op forms too (gradverify.spec.targets)
            raise ValueError(f"{problem}, not {target!r}")
        return target

    @field_validator("expected_gradient")
    @classmethod
    def _expected_gradient_form(cls, value: str | None) -> str | None:
        return _import_path(value, "expected_gradient")

    @field_validator("reference")
    @classmethod
    def _reference_form(cls, value: str | None) -> str | None:
        return _import_path(value, "reference")

    @model_validator(mode="after")
    def _mode_keys(self) -> FunctionSpec:
        if self.expected_gradient is not None and self.gradient != "surrogate":
            raise ValueError("`expected_gradient` belongs to `gradient: surrogate`")
        if self.max_error is not None and self.gradient != "approximate":
            raise ValueError("`max_error` belongs to `gradient: approximate`")
        if self.samples is not None and self.gradient != "approximate":
            raise ValueError("`samples` belongs to `gradient: approximate`")
        for check, key in CONFIGURED_CHECKS.items():
            asked = check in (self.checks or ()) or check in self.extra_checks
            if asked and getattr(self, key) is None:
                raise ValueError(f"check `{check}` needs the key `{key}`")
        if self.checks is not None and self.extra_checks:
            raise ValueError(
                "`extra_checks` adds to the default checks; with `checks:`, list them there"
            )
        return self

    def checks_for(self, custom_op: bool) -> list[CheckId]:
        """The checks to run on a target: those listed; else the default ones (with `compile`
        for a custom op) and `extra_checks`, each whose configuration is present."""
        if self.checks is not None:
            return [check for check in CHECK_IDS if check in self.checks]
        wanted = {*self.extra_checks, *(("compile",) if custom_op else ())}
        return [
            check
            for check in CHECK_IDS
            if (check not in OPT_IN_CHECKS or check in wanted)
            and (
                check not in CONFIGURED_CHECKS
                or getattr(self, CONFIGURED_CHECKS[check]) is not None
            )
        ]

    @property
    def allowed_error(self) -> float:
        """`gradient: approximate`: the largest error allowed (default 1e-3)."""
        return self.max_error if self.max_error is not None else 1e-3

    @property
    def backward_samples(self) -> int:
        """`gradient: approximate`: how many backward runs are averaged (default 1)."""
        return self.samples if self.samples is not None else 1

    @field_validator("cases")
    @classmethod
    def _unique_case_names(cls, cases: list[Case]) -> list[Case]:
        seen: set[str] = set()
        for case in cases:
            if case.name in seen:
                raise ValueError(
                    f"case name {case.name!r} is used twice; case names must be unique"
                )
            seen.add(case.name)
        return cases


class MultiSpec(_Strict):
    """A spec file holding several Functions under `functions:`."""

    functions: list[FunctionSpec] = Field(min_length=1)
