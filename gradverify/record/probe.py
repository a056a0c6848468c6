"""The hooks `gradverify record` puts into the user's processes: every
`torch.autograd.Function.apply` and every call of a torch.library op that Python code
defined (`custom_op`, or `Library.define`) is summarised once per distinct signature, as one
JSON line appended to the file that GRADVERIFY_RECORD names.

Loaded by path from `site/sitecustomize.py` into any Python (so it imports nothing of
gradverify, and torch only once the user's code has imported it), and by the pytest plugin.
What is kept of a tensor: shape, dtype, requires_grad, min and max (over a strided sample
of at most SAMPLE elements), whether integer values repeat, and the values themselves only
for integer and bool tensors of at most CONSTANT elements (indices stay valid, masks and
tables stay what they were) and for floating tensors that do not require grad, finite, of
at most CONSTANT elements (a filter, a table: a constant whose values may be the Function's
contract). A floating tensor of at most CONSTANT elements also gets the structure its values
have (symmetric, SPD, triangular, orthogonal, simplex rows, positive), and its values where
it has one, so that the case drawn in its place keeps it. A callable argument is kept as the
`module:attr` name that imports it, where module-level names reach it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import math
import os
import sys
import threading
from types import FrameType, ModuleType
from typing import Any

ENV = "GRADVERIFY_RECORD"
# Integer and bool tensors, and floating ones that do not require grad, up to this many
# elements: values kept.
CONSTANT = 4096
SAMPLE = 1 << 22  # min/max over at most this many elements (a strided sample beyond)
_LITERALS = (bool, int, float, str, type(None))
# Ops of torch itself, never the user's even when registered from Python.
_TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "higher_order", "inductor"})

_state = threading.local()
_seen: set[Any] = set()
_user_ops: dict[str, str] = {}  # "ns::name" -> the module that called Library.define
_output: list[int] = []  # the file descriptor, once opened
_tensor_type: Any = type(None)  # torch.Tensor, once torch is imported
_skip_dirs: tuple[str, ...] = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def install(path: str) -> None:
    """Record into `path`: now if torch is imported, else as soon as it is."""
    if "torch" in sys.modules and hasattr(sys.modules["torch"], "autograd"):
        _install_hooks(path)
    elif not any(isinstance(finder, _TorchWatcher) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TorchWatcher(path))


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Installs the hooks right after `import torch` has run torch/__init__.py."""

    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module
        output = self.path

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _install_hooks(output)

        loader.exec_module = exec_module  # this loader instance loads torch only
        return spec


def _install_hooks(path: str) -> None:
    import torch
    import torch._ops
    import torch.autograd.function as function_module

    function = function_module.Function
    if getattr(function.apply, "_gradverify_record", False):
        return  # installed already (the pytest plugin inside `gradverify record`)
    global _skip_dirs, _tensor_type
    _tensor_type = torch.Tensor
    _skip_dirs = (*_skip_dirs, os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    _output.append(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
    apply = function.__dict__["apply"].__func__

    def recorded_apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "busy", False) or _is_torch(cls.__module__):
            return apply(cls, *args, **kwargs)
        line = _observe(cls, None, args, kwargs)
        result = apply(cls, *args, **kwargs)
        _write(line)  # only calls that returned: a call that raised shows no valid input
        return result

    recorded_apply._gradverify_record = True  # type: ignore[attr-defined]
    function.apply = classmethod(recorded_apply)  # type: ignore[assignment]
    _wrap_call(torch._ops.OpOverload, lambda op: op._name)
    _wrap_call(torch._ops.OpOverloadPacket, lambda op: op._qualified_op_name)
    _wrap_define(torch.library.Library)
    from torch._library.custom_ops import OPDEFS

    for name, definition in list(OPDEFS.items()):  # defined before the hooks were in
        if name.split("::", 1)[0] not in _TORCH_NAMESPACES:
            _user_ops.setdefault(name, getattr(definition._init_fn, "__module__", "op"))


def _wrap_call(kind: type, name_of: Any) -> None:
    call = kind.__call__

    def recorded_call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        name = name_of(self)
        if name not in _user_ops or getattr(_state, "busy", False):
            return call(self, *args, **kwargs)
        line = _observe(self, name, args, kwargs)
        result = call(self, *args, **kwargs)
        _write(line)
        return result

    kind.__call__ = recorded_call  # type: ignore[method-assign]


def _wrap_define(library: Any) -> None:
    define = library.define

    def recorded_define(self: Any, schema: str, *args: Any, **kwargs: Any) -> Any:
        result = define(self, schema, *args, **kwargs)
        namespace = getattr(self, "ns", "")
        name = schema.split("(", 1)[0].strip().split(".", 1)[0]
        if namespace and namespace not in _TORCH_NAMESPACES:
            _user_ops[f"{namespace}::{name}"] = _caller_module(sys._getframe(1))
        return result

    library.define = recorded_define


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith(("torch.", "functorch"))


def _observe(target: Any, op: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The record of a signature not seen before in this process (or its parent), as a
    (key, line) to write once the call returns; None for a signature seen already."""
    try:
        key = (target, _key(args), _key(tuple(kwargs.items()))) if kwargs else (target, _key(args))
        if key in _seen:  # the hot path: every later call of a recorded signature
            return None
    except Exception:  # never break the user's run for a record (an unhashable literal)
        return None
    _state.busy = True
    try:
        record = {
            "target": _target_name(target, op),
            "site": _site(sys._getframe(1)),
            "args": [_describe(argument) for argument in args],
            "kwargs": {name: _describe(value) for name, value in kwargs.items()},
            "pid": os.getpid(),
        }
        return key, json.dumps(record, allow_nan=False, default=repr) + "\n"
    except Exception:
        return None
    finally:
        _state.busy = False


def _write(observed: Any) -> None:
    if observed is None or not _output or observed[0] in _seen:
        return
    key, line = observed
    _seen.add(key)
    with contextlib.suppress(OSError):  # one write: lines of processes never mix
        os.write(_output[0], line.encode())


def _key(values: Any) -> tuple[Any, ...]:
    """What tells signatures apart: shapes, dtypes, requires_grad and literals (hashable)."""
    parts: list[Any] = []
    for value in values:
        if isinstance(value, _tensor_type):
            parts.append((value.shape, value.dtype, value.requires_grad))
        elif isinstance(value, _LITERALS):
            parts.append((type(value), value))
        elif isinstance(value, list | tuple):
            parts.append(_key(value))
        elif callable(value):  # torch.tanh and torch.sigmoid are two signatures
            name = getattr(value, "__qualname__", None)
            parts.append((type(value), getattr(value, "__module__", None), name))
        else:
            parts.append(type(value))
    return tuple(parts)


def _target_name(target: Any, op: str | None) -> dict[str, Any]:
    """How a spec names the target: `module:Qualname` (a file path for `__main__`), or the
    op `module:ns::name` after the module that defines it."""
    if op is not None:
        from torch._library.custom_ops import OPDEFS

        definition = OPDEFS.get(op)
        module = getattr(getattr(definition, "_init_fn", None), "__module__", None)
        return {"name": f"{_module_spelling(module or _user_ops.get(op) or 'op')}:{op}"}
    qualname = target.__qualname__
    if "<locals>" in qualname:
        return {"name": f"{target.__module__}:{qualname}", "problem": "defined inside a function"}
    return {"name": f"{_module_spelling(target.__module__)}:{qualname}"}


def _module_spelling(module: str) -> str:
    if module != "__main__":
        return module
    file = getattr(sys.modules.get("__main__"), "__file__", None)
    return os.path.abspath(file) if file else "op"


def _caller_module(frame: FrameType | None) -> str:
    while frame is not None and frame.f_code.co_filename.startswith(_skip_dirs):
        frame = frame.f_back
    if frame is None:
        return "op"
    return str(frame.f_globals.get("__name__", "op"))


def _site(frame: FrameType | None) -> str | None:
    """file:line of the first frame outside torch and this module: the user's call."""
    while frame is not None and frame.f_code.co_filename.startswith(_skip_dirs):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{os.path.abspath(frame.f_code.co_filename)}:{frame.f_lineno}"


def _describe(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": _tensor(value)}
    if isinstance(value, float) and not math.isfinite(value):
        return {"other": repr(value)}
    if isinstance(value, _LITERALS):
        return {"literal": value}
    if isinstance(value, list | tuple) and all(
        isinstance(item, _LITERALS) and not isinstance(item, float | str) for item in value
    ):
        return {"literal": list(value)}
    kind = type(value).__name__
    if isinstance(value, list | tuple):
        kind = f"{kind} of {len(value)}"
    elif callable(value):
        name, what = _import_name(value)
        return {"callable": name} if name else {"other": what, "function": True}
    return {"other": kind}


def _import_name(value: Any) -> tuple[str | None, str]:
    """`module:attr` whose import gives `value` back, from module-level names of a module
    already imported (`torch:tanh`, `pkg.mod:fn`); else None and what `value` is."""
    objclass = getattr(value, "__objclass__", None)  # an unbound method of a builtin class
    module = getattr(value, "__module__", None) or getattr(objclass, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    names = [getattr(value, "__name__", None), qualname]
    if objclass is not None:
        names.append(f"{objclass.__qualname__}.{value.__name__}")
    home = sys.modules.get(module) if isinstance(module, str) else None
    if module != "__main__" and home is not None:
        for name in names:
            if isinstance(name, str) and "<" not in name and _reaches(home, name, value):
                return f"{module}:{name}", ""
    if not isinstance(qualname, str):
        return None, f"{type(value).__name__} object"
    if qualname == "<lambda>" or qualname.endswith(".<lambda>"):
        return None, "lambda"
    if "<locals>" in qualname:
        return None, f"function defined inside a function ({qualname})"
    if module == "__main__":
        return None, f"function of the script itself ({qualname})"
    if getattr(value, "__self__", None) is not None:
        return None, f"bound method ({qualname})"
    return None, f"{type(value).__name__} ({qualname})"


def _reaches(module: ModuleType, name: str, value: Any) -> bool:
    found: Any = module
    try:
        for part in name.split("."):
            found = getattr(found, part)
    except Exception:
        return False
    return found is value


def _tensor(tensor: Any) -> dict[str, Any]:
    import torch

    summary: dict[str, Any] = {
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "requires_grad": tensor.requires_grad,
    }
    if tensor.device.type != "cpu":
        summary["device"] = str(tensor.device)
    plain = type(tensor) in (torch.Tensor, torch.nn.Parameter) and tensor.device.type != "meta"
    if not plain or tensor.numel() == 0:
        return summary
    values = tensor.detach()
    exact = (
        values.numel() <= CONSTANT and not values.is_floating_point() and not values.is_complex()
    )
    # JSON holds no inf: a -inf mask stays a range
    small = values.is_floating_point() and values.numel() <= CONSTANT
    finite = small and bool(torch.isfinite(values).all())
    if finite and not tensor.requires_grad:  # a constant, perhaps
        summary["values"] = values.tolist()
    structure = _structure(values) if finite else []
    if structure:
        summary["structure"] = structure
    if structure and structure != ["positive"]:  # a draw may keep only some of it: values too
        summary["values"] = values.tolist()
    if exact:
        summary["values"] = values.tolist()
    if values.dtype == torch.bool:
        return summary
    if values.is_complex():
        values = values.abs()
    flat = values.reshape(-1)
    if flat.numel() > SAMPLE:
        flat = flat[:: -(-flat.numel() // SAMPLE)]
        summary["sampled"] = True
    low, high = (float(bound) for bound in torch.stack(torch.aminmax(flat)).tolist())
    if math.isfinite(low) and math.isfinite(high):
        summary["min"], summary["max"] = low, high
    if not values.is_floating_point() and not tensor.is_complex():
        summary["min"], summary["max"] = int(low), int(high)
        if flat.numel() <= SAMPLE:
            summary["repeats"] = torch.unique(flat).numel() < flat.numel()
    return summary


def _structure(values: Any) -> list[str]:
    """The structure finite floating `values` have, every matrix of a batch alike: `positive`,
    `simplex` (rows of the last dim >= 0 summing to 1), and on square matrices `symmetric`,
    `spd` (symmetric, and Cholesky succeeds), `lower`, `upper`, `orthogonal`."""
    import torch

    if values.dim() == 0 or values.numel() == 0:
        return []
    try:
        return _properties(values, torch.finfo(values.dtype).eps)
    except Exception:  # a dtype without these ops: the record goes on without it
        return []


def _properties(values: Any, eps: float) -> list[str]:
    import torch

    x = values.detach().to("cpu", torch.float64)
    scale = float(x.abs().max())
    if scale == 0:
        return []
    found = ["positive"] if bool((x > 0).all()) else []
    size = x.shape[-1]
    rows_sum_to_one = float((x.sum(-1) - 1).abs().max()) <= 16 * eps * size
    if size >= 2 and rows_sum_to_one and bool((x >= 0).all()):
        found.append("simplex")
    if x.dim() < 2 or x.shape[-2] != size or size < 2:
        return found
    tolerance = 4 * eps * scale  # a product such as M Mᵀ is symmetric to the last bit
    if float((x - x.mT).abs().max()) <= tolerance:
        found.append("symmetric")
        if bool((torch.linalg.cholesky_ex((x + x.mT) / 2).info == 0).all()):
            found.append("spd")
    if float(x.triu(1).abs().max()) <= tolerance:
        found.append("lower")
    if float(x.tril(-1).abs().max()) <= tolerance:
        found.append("upper")
    eye = torch.eye(size, dtype=x.dtype)
    if float((x @ x.mT - eye).abs().max()) <= 16 * eps * size:
        found.append("orthogonal")
    return found


def installed_from_environment() -> None:
    """What sitecustomize runs: record into the file GRADVERIFY_RECORD names, if set."""
    path = os.environ.get(ENV)
    if path:
        install(path)
