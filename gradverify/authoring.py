"""Help for writing specs: a starter spec from forward's signature, the JSON Schema of the
spec format, and what each check verifies.

Importing this module never imports torch; `init` does when it loads the target.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gradverify.checks.docs import ALIASES, EXPLANATIONS, SUMMARIES, TOPICS
from gradverify.errors import UsageError
from gradverify.results import Report, Status
from gradverify.spec.models import CHECK_IDS, DTYPE_NAMES, FunctionSpec, MultiSpec
from gradverify.spec.suggest import did_you_mean

if TYPE_CHECKING:
    from gradverify.target import Target

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
RULE_ID = re.compile(r"GV\d{3}")
# Names that conventionally hold a Linear's weight and bias, for the shapes guessed below.
WEIGHT_NAMES = re.compile(r"(^|_)(w|weight|weights|kernel|matrix)($|_)", re.IGNORECASE)
BIAS_NAMES = re.compile(r"(^|_)(b|bias|offset)($|_)", re.IGNORECASE)
SCALAR_TYPES = {"int": 1, "float": 1.0, "bool": True, "str": ""}
# Parameters that are scalars by convention, when nothing else says what they are.
SCALAR_NAMES = {"dim": -1, "axis": -1, "keepdim": False, "eps": 1e-5, "inplace": False}


# --- init -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """One positional parameter of forward, as the starter spec writes it."""

    name: str
    tensor: bool
    value: Any = None  # a literal's value
    note: str = ""  # the comment beside it


@dataclass(frozen=True)
class Starter:
    """The starter spec `init` wrote, and what trying it showed."""

    path: Path
    text: str
    report: Report | None  # None: forward rejected every guess, nothing was run
    advice: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed


def init(
    target_spec: str,
    output: Path | None = None,
    force: bool = False,
    run: Callable[[Path], Report] | None = None,
) -> Starter:
    """Write a starter spec for `target_spec` and try it with `run` (None: do not run it)."""
    from gradverify.target import load_target

    target = load_target(target_spec)
    path = output or Path("specs") / _file_name(target_spec)
    if path.exists() and not force:
        raise UsageError(
            f"{str(path)!r} exists; choose another --output, or --force to overwrite it"
        )
    parameters = introspect(target)
    shapes, rejection = _working_shapes(target, parameters)
    text = starter_text(target_spec, parameters, shapes, target.variadic)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if rejection is not None:
        names = ", ".join(p.name for p in parameters if p.tensor)
        advice = [
            f"forward rejected every guess of shapes ({rejection}): give {names} the shapes "
            f"forward expects in {path}, then run `gradverify check {path}`"
        ]
        return Starter(path, text, None, advice)
    report = run(path) if run is not None else None
    return Starter(path, text, report, _advice(report, path, parameters))


def introspect(target: Target) -> list[Parameter]:
    """forward's positional parameters: tensors, or literals with their default or a placeholder."""
    annotations = _annotations(target)
    parameters = []
    for name in target.parameters:
        annotation = annotations.get(name, "")
        if name in target.defaults:
            default = target.defaults[name]
            if default is None and ("Tensor" in annotation or BIAS_NAMES.search(name)):
                note = f"{name}: None by default; `{{shape: [...]}}` checks its gradient too"
                parameters.append(Parameter(name, tensor=False, value=None, note=note))
            else:
                parameters.append(Parameter(name, False, default, f"{name}: forward's default"))
        elif not annotation and name in SCALAR_NAMES:
            note = f"{name}: guessed from its name: choose a value"
            parameters.append(Parameter(name, tensor=False, value=SCALAR_NAMES[name], note=note))
        elif "Tensor" in annotation or annotation not in SCALAR_TYPES:
            parameters.append(Parameter(name, tensor=True, note=f"{name}: a tensor"))
        else:
            value = SCALAR_TYPES[annotation]
            note = f"{name}: {annotation}, no default: choose a value"
            parameters.append(Parameter(name, tensor=False, value=value, note=note))
    return parameters


def _annotations(target: Target) -> dict[str, str]:
    """Parameter annotations as written (strings), read without evaluating them."""
    forward = getattr(target.obj, "forward", target.obj) if target.is_function else target.obj
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return {}
    written = {}
    for name, parameter in signature.parameters.items():
        annotation = parameter.annotation
        if annotation is parameter.empty:
            continue
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        written[name] = text.rsplit(".", 1)[-1].removesuffix(" | None")
    return written


def shape_guesses(parameters: Sequence[Parameter]) -> list[list[list[int]]]:
    """Shapes to try for the tensor parameters, in order: elementwise, Linear-like, square."""
    tensors = [p for p in parameters if p.tensor]
    elementwise = [[4] for _ in tensors]
    linear = [
        [3, 4] if WEIGHT_NAMES.search(p.name) else [3] if BIAS_NAMES.search(p.name) else [2, 4]
        for p in tensors
    ]
    square = [[3, 3] for _ in tensors]
    guesses: list[list[list[int]]] = []
    for guess in (elementwise, linear, square):
        if guess not in guesses:
            guesses.append(guess)
    return guesses


def _working_shapes(
    target: Target, parameters: Sequence[Parameter]
) -> tuple[list[list[int]], str | None]:
    """The first guess forward and backward both run on; else the first forward runs on
    (the trial then shows backward's failure); else the first guess and forward's complaint.
    """
    guesses = shape_guesses(parameters)
    forward_only = None
    first_error = None
    for shapes in guesses:
        stage, error = _probe(target, _spec(target.spec, parameters, shapes))
        if error is None:
            return shapes, None
        if stage == "backward":
            forward_only = forward_only or shapes
        else:
            first_error = first_error or error
    return (forward_only, None) if forward_only else (guesses[0], first_error)


def _probe(target: Target, spec: FunctionSpec) -> tuple[str, str | None]:
    """Run forward, then backward with ones as grad_outputs: the stage reached, and any error."""
    import torch

    from gradverify.inputs import build_inputs

    arguments = build_inputs(spec.cases[0], spec.seed)
    stage = "forward"
    with torch.random.fork_rng(devices=[]):  # the user's global RNG is left as it was
        try:
            outputs = target.call(*arguments)
            stage = "backward"
            items = outputs if isinstance(outputs, tuple | list) else (outputs,)
            tensors = [o for o in items if isinstance(o, torch.Tensor) and o.requires_grad]
            if tensors:
                torch.autograd.backward(tensors, [torch.ones_like(o) for o in tensors])
        except Exception as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            return stage, f"{type(error).__name__}: {message}"
    return stage, None


def _spec(target_spec: str, parameters: Sequence[Parameter], shapes: list[list[int]]) -> Any:
    return FunctionSpec.model_validate(
        {"target": target_spec, "cases": [{"name": "basic", "inputs": _inputs(parameters, shapes)}]}
    )


def _inputs(parameters: Sequence[Parameter], shapes: list[list[int]]) -> list[Any]:
    shape_of = iter(shapes)
    inputs: list[Any] = []
    for parameter in parameters:
        if parameter.tensor:
            inputs.append({"shape": next(shape_of), "low": -1.0, "high": 1.0})
        elif isinstance(parameter.value, dict):
            inputs.append({"value": parameter.value})  # a bare mapping would read as a tensor
        else:
            inputs.append(parameter.value)
    return inputs


def starter_text(
    target_spec: str,
    parameters: Sequence[Parameter],
    shapes: list[list[int]],
    variadic: str | None = None,
) -> str:
    """The starter spec's YAML, one commented line per input."""
    lines = [
        f"# Starter spec written by `gradverify init {target_spec}`: adjust the shapes and",
        "# values to what your Function is for, and add cases (edge values, other shapes,",
        "# float32) once this one passes. Every key: `gradverify schema`, docs/spec.md.",
        f"target: {target_spec}",
        "cases:",
        "  - name: basic",
        "    inputs:" if parameters else "    inputs: []",
    ]
    items = [_flow(item) for item in _inputs(parameters, shapes)]
    width = max((len(item) for item in items), default=0)
    for item, parameter in zip(items, parameters, strict=True):
        lines.append(f"      - {item.ljust(width)}   # {parameter.note}")
    if variadic is not None:
        lines.append(f"      # *{variadic}: add its inputs here")
    return "\n".join(lines) + "\n"


def _flow(value: Any) -> str:
    """`value` as one line of YAML that loads back to it."""
    if isinstance(value, tuple):
        value = list(value)
    try:
        text = yaml.safe_dump(value, default_flow_style=True, width=2**31, sort_keys=False)
    except yaml.YAMLError:
        return f"null  # TODO: {value!r} has no YAML form"
    return text.removesuffix("...\n").strip()


def _advice(report: Report | None, path: Path, parameters: Sequence[Parameter]) -> list[str]:
    if report is None:
        return [f"run it with `gradverify check {path}`"]
    failed = [result for result in report.results if result.status is Status.FAIL]
    if not failed:
        return [
            f"{path} passes. Now make it yours: shapes and value ranges your Function is used "
            "with, a case at each edge (zeros, kinks with `kinks:`), and a float32 case.",
        ]
    advice = []
    checks = sorted({result.check for result in failed}, key=CHECK_IDS.index)
    crashed = [c for c in checks if c in ("forward", "backward", "layouts")]
    if crashed:
        names = ", ".join(p.name for p in parameters if p.tensor) or "the inputs"
        advice.append(
            f"{', '.join(crashed)} failed: if forward or backward needs other shapes or "
            f"values, adjust {names} in {path}; otherwise the report above names the bug."
        )
    numerical = [c for c in checks if c not in crashed]
    if numerical:
        advice.append(
            f"{', '.join(numerical)} failed: either backward is wrong (the report names the "
            "element and the likely cause) or the spec needs `kinks:`, `gradient: surrogate` "
            "or looser `tolerance`."
        )
    advice.append(
        "For what a check verifies and how to fix it: "
        + ", ".join(f"`gradverify explain {check}`" for check in checks)
    )
    return advice


def _file_name(target_spec: str) -> str:
    attr = target_spec.rsplit(":", 1)[-1].split(".")[-1]
    # ClippedReLU -> clipped_relu: a word starts at a capital between lower-case letters.
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", attr).lower() + ".yaml"


# --- schema -----------------------------------------------------------------------------


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file: one Function, or several under `functions:`."""
    schema = MultiSpec.model_json_schema()
    definitions: dict[str, Any] = schema.pop("$defs")
    definitions["MultiSpec"] = schema
    _refine(definitions)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "gradverify spec",
        "description": "A gradverify spec: one Function (`target`, `cases`, ...) or several "
        "under `functions:`.",
        "anyOf": [{"$ref": "#/$defs/FunctionSpec"}, {"$ref": "#/$defs/MultiSpec"}],
        "$defs": definitions,
    }


def _refine(definitions: dict[str, Any]) -> None:
    """What the models' validators check in code, said in JSON Schema for editors."""
    tensor = definitions["TensorInput"]
    # Exactly one of `shape` and `values` (a key set to null does not count).
    tensor["oneOf"] = [
        {"required": ["shape"], "properties": {"shape": {"type": "array"}}},
        {"required": ["values"], "properties": {"values": {"not": {"type": "null"}}}},
    ]
    names = sorted(DTYPE_NAMES)
    tensor["properties"]["dtype"]["enum"] = [*names, *(f"torch.{name}" for name in names)]
    tensor["properties"]["device"]["pattern"] = r"^(cpu|cuda|mps|xpu|meta)(:.*)?$"
    inputs = definitions["Case"]["properties"]["inputs"]["items"]
    # The "plain" branch of an input is anything but a mapping: a mapping is a tensor,
    # or a literal when written `{value: ...}`.
    inputs["oneOf"] = [item if item else {"not": {"type": "object"}} for item in inputs["oneOf"]]
    function = definitions["FunctionSpec"]["properties"]
    for key in ("target", "reference", "expected_gradient"):
        for branch in function[key]["anyOf"]:
            if branch.get("type") == "string":
                branch["pattern"] = r"^[^:].*:.*[^:]$"


# --- checks and explain -----------------------------------------------------------------


def check_list() -> list[tuple[str, str]]:
    """Every check id with its one-line description, in the order checks run."""
    return [(check, SUMMARIES[check]) for check in CHECK_IDS]


def explain(name: str | None = None) -> str:
    """What a check, a topic (`surrogate`, `kinks`, ...) or a lint rule such as GV103 is,
    and how to fix what it finds; with no name, the index of everything it can explain.

    Torch is imported only for the lint rules (`lint` and the GV ids), whose registry lives
    in the lint check.
    """
    if name is None:
        return _explain_index()
    # `finite-difference`, `Kinks`: the spelling of a flag or a heading finds the name too.
    spelled = name.strip().lower().replace("-", "_")
    key = ALIASES.get(spelled, spelled)
    if key in EXPLANATIONS:
        text = f"{key}: {SUMMARIES[key]}\n\n{EXPLANATIONS[key]}"
        return f"{text}\n\n{_rule_list()}" if key == "lint" else text
    if key in TOPICS:
        topic_summary, text = TOPICS[key]
        return f"{key}: {topic_summary}\n\n{text}"
    if RULE_ID.fullmatch(key.upper()):
        from gradverify.checks.lint import RULES  # imports torch: only for a rule id

        rule = RULES.get(key.upper())
        if rule is not None:
            title, remedy = rule
            return f"{key.upper()} (check lint): {title}\n\nFix: {remedy}."
        raise UsageError(f"no lint rule {name!r}; the rules are {', '.join(RULES)}")
    names = [*CHECK_IDS, *TOPICS, *ALIASES]
    raise UsageError(
        f"no check or topic {name!r}{did_you_mean(spelled, names)}; the topics are "
        f"{', '.join(TOPICS)}, and `gradverify explain` lists everything it explains"
    )


def _explain_index() -> str:
    width = max(len(name) for name in [*CHECK_IDS, *TOPICS])
    checks = [f"  {check.ljust(width)}  {SUMMARIES[check]}" for check in CHECK_IDS]
    topics = [f"  {name.ljust(width)}  {TOPICS[name][0]}" for name in TOPICS]
    return "\n".join(
        [
            "gradverify explain NAME, where NAME is",
            "a check:",
            *checks,
            "a topic:",
            *topics,
            "or a lint rule id such as GV103 (`gradverify explain lint` lists them).",
        ]
    )


def _rule_list() -> str:
    """Every lint rule from the registry, title and remedy, in the order of their ids."""
    from gradverify.checks.lint import RULES  # imports torch

    lines = ["The rules (`gradverify explain GV101` for one):"]
    for rule, (title, remedy) in RULES.items():
        lines.append(f"  {rule}  {title}")
        lines += textwrap.wrap(
            f"Fix: {remedy}.", width=88, initial_indent=" " * 9, subsequent_indent=" " * 9
        )
    return "\n".join(lines)
