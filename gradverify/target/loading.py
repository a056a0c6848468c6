"""Load a target given as `module.path:Attr`, `path/to/file.py:Attr` or a custom op
(gradverify.spec.targets lists the forms; gradverify.target.ops describes ops)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from gradverify.errors import TargetError
from gradverify.spec.suggest import did_you_mean
from gradverify.spec.targets import FORMS, form_problem, parse_target
from gradverify.target.dirty import DirtyArguments, dirty_arguments
from gradverify.target.legacy import legacy_refusal
from gradverify.target.loaded import Target, cloning, source_of
from gradverify.target.ops import describe_op, find_op, op_parts, op_spec

_OUR_DIR = str(Path(__file__).resolve().parents[1])  # gradverify/
_IMPORTLIB_DIR = str(Path(importlib.__file__).resolve().parent)


def load_target(spec: str) -> Target:
    """Import the target's module and resolve its attribute, or look its op up (the forms
    of gradverify.spec.targets); TargetError on any failure."""
    form = parse_target(spec)
    if form is None:
        raise TargetError(spec, form_problem(spec) or f"expected {FORMS}")
    module = None
    if form.module is not None:
        _make_cwd_importable()
        module = _import(spec, form.module)
    if form.op is not None:
        return describe_op(spec, find_op(spec, form.op, module))
    assert module is not None and form.attribute is not None
    return _describe(spec, _resolve(spec, module, form.attribute))


def load_object(path: str) -> Any:
    """The object a `module:attr` path names (`torch:sin`, `mypkg.ops:rhs`); TargetError,
    naming what is missing, on any failure."""
    module_part, _, attribute = path.partition(":")
    if not module_part or not attribute:
        raise TargetError(path, "expected module:attribute (`torch:sin`)")
    _make_cwd_importable()
    return _resolve(path, _import(path, module_part), attribute)


def target_of(obj: Any, name: str | None = None) -> Target:
    """A Target for an object already in hand (the Python API); named `module:qualname`
    (an op `module:ns::name`) unless `name`."""
    if op_parts(obj) is not None:
        return describe_op(name or op_spec(obj), obj)
    if name is None:
        module = getattr(obj, "__module__", None) or "<unknown>"
        qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        name = f"{module}:{qualname}"
    return _describe(name, obj)


def _make_cwd_importable() -> None:
    # As with pytest's rootdir: the project the user runs from is importable.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(spec: str, module_part: str) -> ModuleType:
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        module_name = _prepare_file_import(spec, Path(module_part))
    else:
        module_name = module_part
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise TargetError(
                spec, f"no module named {exc.name!r}{_module_suggestion(exc.name)}"
            ) from None
        raise _user_import_error(spec, module_name, exc) from None
    except Exception as exc:  # the user's module raised while being imported
        raise _user_import_error(spec, module_name, exc) from None


def _prepare_file_import(spec: str, path: Path) -> str:
    """Put the file's top package directory on sys.path and return its dotted name."""
    if not path.is_file():
        raise TargetError(spec, f"no file {str(path)!r}")
    path = path.resolve()
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    return ".".join(parts)


def _module_suggestion(missing: str) -> str:
    parent, _, leaf = missing.rpartition(".")
    try:
        if parent:
            package = importlib.import_module(parent)
            names = [info.name for info in pkgutil.iter_modules(getattr(package, "__path__", []))]
        else:
            names = [info.name for info in pkgutil.iter_modules([os.getcwd()])]
    except Exception:
        return ""
    return did_you_mean(leaf, names)


def _user_import_error(spec: str, module_name: str, exc: BaseException) -> TargetError:
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(("<frozen", _OUR_DIR, _IMPORTLIB_DIR))
    ]
    lines = ["Traceback (user code, trimmed):\n", *traceback.format_list(frames)]
    lines.extend(traceback.format_exception_only(type(exc), exc))
    details = "".join(lines).rstrip()
    headline = f"importing {module_name!r} raised {type(exc).__name__}: {exc}"
    return TargetError(spec, headline, details)


def _resolve(spec: str, module: ModuleType, attr_path: str) -> Any:
    obj: Any = module
    walked = module.__name__
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [name for name in dir(obj) if not name.startswith("_")]
            raise TargetError(
                spec, f"{walked!r} has no attribute {part!r}{did_you_mean(part, names)}"
            )
        obj = getattr(obj, part)
        walked = f"{walked}.{part}"
    return obj


def _describe(spec: str, obj: Any) -> Target:
    import torch

    if op_parts(obj) is not None:  # `module:mysin`, a CustomOpDef or torch.ops.ns.name
        return describe_op(spec, obj)

    is_function = isinstance(obj, type) and issubclass(obj, torch.autograd.Function)
    refusal = legacy_refusal(obj) if is_function else None
    if refusal is not None:
        raise TargetError(spec, refusal)
    if is_function:
        forward = obj.forward
        call = obj.apply
    elif callable(obj):
        forward = obj
        call = obj
    else:
        raise TargetError(
            spec, f"{type(obj).__name__} object is not callable; point at a Function or a function"
        )
    signature = _signature(forward, drop_ctx=is_function and _takes_ctx(obj))
    backward = inspect.unwrap(obj.backward) if is_function else obj
    source_file, backward_line = source_of(backward, at_def=True)
    once = is_function and _is_once_differentiable(obj.backward)
    dirty = dirty_arguments(obj, new_style=not _takes_ctx(obj)) if is_function else DirtyArguments()
    if dirty:
        call = cloning(call, dirty)
    return Target(
        spec, obj, call, signature.parameters, signature.defaults, signature.variadic,
        is_function, source_file, backward_line, once, dirty,
        required_keywords=signature.required_keywords, signature_known=signature.known,
    )  # fmt: skip


def _is_once_differentiable(backward: Any) -> bool:
    """Whether backward is wrapped by torch.autograd.function.once_differentiable."""
    import torch.autograd.function as autograd_function

    code = getattr(backward, "__code__", None)
    return (
        code is not None
        and hasattr(backward, "__wrapped__")
        and code.co_filename == autograd_function.__file__
        and code.co_name == "wrapper"
    )


def _takes_ctx(function_class: Any) -> bool:
    import torch

    # New-style Functions define setup_context, and their forward takes no ctx.
    return function_class.setup_context is torch.autograd.Function.setup_context


@dataclass(frozen=True)
class _Signature:
    parameters: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    variadic: str | None = None
    required_keywords: tuple[str, ...] = ()
    known: bool = True


def _signature(forward: Callable[..., Any], drop_ctx: bool) -> _Signature:
    try:
        parameters = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):
        return _Signature(known=False)
    if drop_ctx and parameters:
        parameters = parameters[1:]
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = next((p.name for p in parameters if p.kind is p.VAR_POSITIONAL), None)
    defaults = {p.name: p.default for p in positional if p.default is not p.empty}
    keywords = tuple(
        p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    )
    return _Signature(tuple(p.name for p in positional), defaults, variadic, keywords)
