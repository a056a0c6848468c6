"""torch.library ops as targets: find one by its qualified name, and describe it from its
schema (argument names, defaults and types; the arguments it writes, from mutates_args) and its
CustomOpDef (the registered backward's source)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from gradverify.errors import TargetError
from gradverify.spec.suggest import did_you_mean
from gradverify.target.dirty import DirtyArguments
from gradverify.target.loaded import Target, cloning, source_of

# Schema types as the schema's text writes them; SymInt is an int to a caller.
_SCHEMA_TYPES = {
    "TensorType": "Tensor", "FloatType": "float", "IntType": "int", "SymIntType": "int",
    "BoolType": "bool", "StringType": "str", "NumberType": "Scalar", "SymFloatType": "float",
}  # fmt: skip


def find_op(spec: str, qualified: str, module: ModuleType | None) -> Any:
    """The op `ns::name[.overload]` as torch.ops holds it, once `module` (if any) registered it."""
    import torch

    name, _, overload = qualified.partition(".")
    namespace, _, op = name.partition("::")
    try:
        found = getattr(getattr(torch.ops, namespace), op)
        return getattr(found, overload) if overload else found
    except (AttributeError, RuntimeError):
        pass
    known = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith(f"{namespace}::")]
    if module is not None:
        problem = f"importing {module.__name__!r} registered no op {name!r}"
    else:
        problem = (
            f"no op {name!r} is registered: name the module that defines it, "
            f"`package.module:{name}`, so that importing it registers the op"
        )
    if overload and name in known:
        problem = f"op {name!r} has no overload {overload!r}"
    raise TargetError(spec, problem + did_you_mean(name, known))


def op_parts(obj: Any) -> tuple[Any, Any] | None:
    """(the op's CustomOpDef or None, the op as torch.ops holds it) for an op object: a
    CustomOpDef, an OpOverloadPacket or an OpOverload; None for anything else."""
    import torch
    from torch._library.custom_ops import OPDEFS, CustomOpDef

    if isinstance(obj, CustomOpDef):
        return obj, obj._opoverload
    if isinstance(obj, torch._ops.OpOverloadPacket):
        return OPDEFS.get(obj._qualified_op_name), obj
    if isinstance(obj, torch._ops.OpOverload):
        return OPDEFS.get(obj._schema.name), obj
    return None


def op_spec(obj: Any) -> str:
    """How a spec names the op object `obj`: `module:ns::name` after the module whose function
    defines it (importing which registers it), else `op:ns::name`."""
    parts = op_parts(obj)
    assert parts is not None
    definition, op = parts
    name = _qualified_name(op)
    module = getattr(getattr(definition, "_init_fn", None), "__module__", None)
    return f"{module or 'op'}:{name}"


def describe_op(spec: str, obj: Any) -> Target:
    """A Target for an op: the schema's argument names, defaults and types; the registered
    backward's source (or, with none registered, the op's own function)."""
    parts = op_parts(obj)
    assert parts is not None
    definition, op = parts
    overload = _overload(spec, op)
    arguments = [a for a in overload._schema.arguments if not a.kwarg_only]
    parameters = tuple(a.name for a in arguments)
    defaults = {a.name: a.default_value for a in arguments if a.has_default_value()}
    types = {a.name: _schema_type(a.type) for a in arguments}
    source = None
    if definition is not None:
        source = definition._backward_fn or definition._init_fn
    source_file, backward_line = (
        source_of(inspect.unwrap(source), at_def=True) if source else (None, None)
    )
    # The arguments the schema marks written (`Tensor(a!)`, from mutates_args).
    mutated = DirtyArguments(
        tuple(
            i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write
        )
    )
    call = _op_call(overload)
    return Target(
        spec, definition or overload, cloning(call, mutated) if mutated else call, parameters,
        defaults, None, False, source_file, backward_line, dirty=mutated,
        op_name=_qualified_name(op), schema_types=types, op=overload,
        required_keywords=tuple(
            a.name for a in overload._schema.arguments
            if a.kwarg_only and not a.has_default_value()
        ),
    )  # fmt: skip


def _op_call(op: Any) -> Callable[..., Any]:
    """`op`, called without torch's autograd fallback for an op with no autograd kernel.

    In its default mode ("warn") that fallback hooks every output so that backward warns
    ("an autograd kernel was not registered to the Autograd key(s)") from every check that
    differentiates: noise, since opcheck's test_autograd_registration reports it once, as a
    failure. The mode is read when the op runs, so forward is the place to set it. Under
    torch.compile the op is called as it is: dynamo traces the call, not the mode switch.
    """
    import torch

    def call(*arguments: Any) -> Any:
        if torch.compiler.is_compiling():
            return op(*arguments)
        previous = torch._C._get_autograd_fallback_mode()
        torch._C._set_autograd_fallback_mode("nothing")
        try:
            return op(*arguments)
        finally:
            torch._C._set_autograd_fallback_mode(previous)

    return call


def _qualified_name(op: Any) -> str:
    """ "ns::name", without the overload."""
    name = getattr(op, "_qualified_op_name", None)  # a packet's
    return str(name) if name is not None else str(op._schema.name)


def _overload(spec: str, op: Any) -> Any:
    """The OpOverload to call: `op` itself, or a packet's `default` (or only) overload."""
    import torch

    if not isinstance(op, torch._ops.OpOverloadPacket):
        return op
    names = op.overloads()
    if "default" in names or len(names) == 1:
        return getattr(op, "default" if "default" in names else names[0])
    written = ", ".join(f"`{op._qualified_op_name}.{name}`" for name in names)
    raise TargetError(
        spec, f"op {op._qualified_op_name!r} has several overloads: name one of {written}"
    )


def _schema_type(jit_type: Any) -> str:
    kind = jit_type.kind()
    if kind == "OptionalType":
        return _schema_type(jit_type.getElementType()) + "?"
    if kind == "ListType":
        return _schema_type(jit_type.getElementType()) + "[]"
    return _SCHEMA_TYPES.get(kind, str(jit_type))
