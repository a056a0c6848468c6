"""`lint`: known pitfalls of hand-written Functions, read off their source and graph node.

Each finding carries a stable rule id (RULES), the user's file and line, and the remedy.
Findings warn, unless the pitfall makes this case crash or compute a wrong result: then
they fail. The syntax-tree walking lives in lint/methods.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from gradverify.catalogue import LINT_RULES as RULES
from gradverify.checks.lint.forward_run import ForwardRun, run_forward, save_for_backward_crash
from gradverify.checks.lint.inplace import inplace_writes
from gradverify.checks.lint.methods import (
    Method,
    SaveCall,
    SavedArgument,
    SourceUnavailable,
    counted_returns,
    ctx_assignments,
    data_uses,
    find_method,
    forward_inputs,
    save_calls,
    setup_context_inputs,
)
from gradverify.checks.lint.saved import writes_after_save
from gradverify.checks.shared.case import CaseContext
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError


@dataclass(frozen=True)
class RuleHit:
    """One pitfall: where it is and how bad; becomes one Result."""

    rule: str
    status: Status
    message: str  # without the rule id
    file: str | None
    line: int | None
    input_index: int | None = None
    output_index: int | None = None
    notes: tuple[str, ...] = ()


@dataclass
class Sources:
    """The methods whose source could be read, and what could not be."""

    forward: Method | None = None
    setup_context: Method | None = None
    backward: Method | None = None
    new_style: bool = False  # forward without ctx, state saved in setup_context
    notes: list[str] = field(default_factory=list)


class LintCheck:
    """Pitfalls GV101–GV106: ctx tensors, .data, in-place grads, return count, what is saved."""

    id: ClassVar[str] = "lint"

    def run(self, context: CaseContext) -> list[Result]:
        if not context.target.is_function:
            return [
                context.result(
                    self.id,
                    Status.SKIP,
                    "lint applies to torch.autograd.Function subclasses",
                    applies=False,
                )
            ]
        sources = read_sources(context.target.obj)
        forward_run = run_forward(context)
        findings = [
            *ctx_tensor_findings(sources, forward_run),
            *data_findings(sources),
            *inplace_findings(sources),
            *return_count_findings(context, sources),
            *save_findings(context, sources, forward_run),
            *saved_write_findings(sources),
        ]
        notes = [*sources.notes, *([forward_run.note] if forward_run.note else [])]
        if not findings:
            return [
                context.result(
                    self.id, Status.PASS, "no pitfalls found (GV101–GV106)", notes=tuple(notes)
                )
            ]
        findings.sort(key=lambda f: (f.rule, f.line or 0))
        return [_result(context, self.id, finding, notes) for finding in findings]


def _result(context: CaseContext, check: str, finding: RuleHit, notes: list[str]) -> Result:
    return context.result(
        check,
        finding.status,
        f"{finding.rule}: {finding.message}",
        rule=finding.rule,
        source_file=finding.file,
        source_line=finding.line,
        hint=RULES[finding.rule][1],
        input_index=finding.input_index,
        output_index=finding.output_index,
        notes=(*finding.notes, *notes),
    )


def read_sources(function_class: Any) -> Sources:
    """forward, setup_context (new style) and backward (or vjp) as syntax trees, if readable."""
    base = torch.autograd.Function
    new_style = function_class.setup_context is not base.setup_context
    missing: dict[str, list[str]] = {}  # reason -> the methods it applies to

    def read(name: str) -> Method | None:
        try:
            return find_method(function_class, name)
        except SourceUnavailable as reason:
            missing.setdefault(str(reason), []).append(name)
            return None

    sources = Sources(
        forward=read("forward"),
        setup_context=read("setup_context") if new_style else None,
        backward=read("vjp" if function_class.vjp is not base.vjp else "backward"),
        new_style=new_style,
    )
    for reason, names in missing.items():
        sources.notes.append(
            f"source of {' and '.join(names)} unavailable ({reason}): the static rules skip "
            f"{'them' if len(names) > 1 else 'it'}; GV101, and GV105 when forward crashes, are "
            "still found at run time"
        )
    return sources


def ctx_tensor_findings(sources: Sources, forward_run: ForwardRun) -> list[RuleHit]:
    """GV101: tensors found on the graph node, at the line that assigns them when it is found."""
    writer = sources.setup_context if sources.new_style else sources.forward
    findings = []
    for name, described in forward_run.tensor_attributes.items():
        line = ctx_assignments(writer, writer.first).get(name) if writer else None
        findings.append(
            RuleHit(
                "GV101",
                Status.WARN,
                f"ctx.{name} holds {described}: kept on ctx instead of saved with "
                "save_for_backward",
                writer.file if writer else None,
                line or (writer.line if writer else None),
            )
        )
    return findings


def data_findings(sources: Sources) -> list[RuleHit]:
    """GV102: `.data` in forward, setup_context or backward."""
    findings = []
    for method in (sources.forward, sources.setup_context, sources.backward):
        if method is None:
            continue
        ctx = None if method.name == "forward" and sources.new_style else method.first
        for line, code in data_uses(method, ctx):
            findings.append(
                RuleHit(
                    "GV102",
                    Status.WARN,
                    f"`{code}` in {method.name}: .data is invisible to autograd",
                    method.file,
                    line,
                )
            )
    return findings


def inplace_findings(sources: Sources) -> list[RuleHit]:
    """GV103: in-place writes in backward into grad_output or saved tensors."""
    backward = sources.backward
    if backward is None:
        return []
    findings = []
    for write in inplace_writes(backward):
        if write.grad_output and write.output_index is not None:
            what = f"grad_output {write.output_index} ({write.tensor})"
        elif write.grad_output:
            what = f"a grad_output ({write.tensor})"
        else:
            what = f"the saved tensor {write.tensor}"
        findings.append(
            RuleHit(
                "GV103",
                Status.WARN,
                f"`{write.code}` in {backward.name} modifies {what} in place",
                backward.file,
                write.line,
                output_index=write.output_index,
            )
        )
    return findings


def return_count_findings(context: CaseContext, sources: Sources) -> list[RuleHit]:
    """GV104: `return`s of backward with too few values, or extra values that are not None.

    Fewer values than this case's arguments, or an extra value certainly not None, crash the
    call: fail. Fewer than forward's parameters but enough for this case (defaults left out)
    crash only other calls, and an extra value that may be None at run time may be fine: warn.
    """
    backward = sources.backward
    if backward is None:
        return []
    target = context.target
    given = len(context.arguments)
    expected = max(len(target.parameters), given) if target.variadic else len(target.parameters)
    names = ", ".join(filter(None, (target.argument_name(i) for i in range(expected))))
    takes = f"forward takes {expected} argument(s)" + (f" ({names})" if names else "")
    findings = []
    for returned in counted_returns(backward):
        count = len(returned.kinds)
        extra = [i for i in range(expected, count) if returned.kinds[i] != "none"]
        if count < expected:
            status = Status.FAIL if count < given else Status.WARN
            message = f"{backward.name} returns {count} value(s) here, but {takes}"
            if status is Status.WARN:
                message += f"; this case passes only {given}, so only a call passing all {expected} crashes"
        elif extra:
            certain = any(returned.kinds[i] == "value" for i in extra)
            status = Status.FAIL if certain else Status.WARN
            message = f"{backward.name} returns {count} values here, but {takes}; value {extra[0]} is not None"
            if not certain:
                message += " (unless it is None at run time)"
        else:
            continue
        findings.append(RuleHit("GV104", status, message, backward.file, returned.line))
    return findings


def save_findings(context: CaseContext, sources: Sources, forward_run: ForwardRun) -> list[RuleHit]:
    """GV105: non-tensors given to save_for_backward; fail when forward crashes on them."""
    method = sources.setup_context if sources.new_style else sources.forward
    crash = (
        forward_run.error
        if forward_run.error and save_for_backward_crash(forward_run.error)
        else None
    )
    calls = []
    if method is not None:
        named = setup_context_inputs(method) if sources.new_style else forward_inputs(method)
        calls = save_calls(method, method.first, named)
    status = Status.FAIL if crash else Status.WARN
    notes = (f"forward raised {type(crash.error).__name__}: {crash.error}",) if crash else ()
    findings = []
    for call in calls:
        for argument in call.arguments:
            what = _non_tensor(context, argument)
            if what is not None and method is not None:
                findings.append(
                    RuleHit(
                        "GV105",
                        status,
                        f"save_for_backward is given `{argument.code}`, {what}, which is not "
                        f"a tensor{'; forward crashes' if crash else ''}",
                        method.file,
                        call.line,
                        input_index=argument.input_index,
                        notes=notes,
                    )
                )
    if crash and not findings:
        findings.append(_crash_finding(crash, method, calls))
    return findings


def saved_write_findings(sources: Sources) -> list[RuleHit]:
    """GV106: in-place changes in forward (setup_context) to tensors it already saved."""
    method = sources.setup_context if sources.new_style else sources.forward
    if method is None:
        return []
    return [
        RuleHit(
            "GV106",
            Status.WARN,
            f"`{found.write.code}` in {method.name} modifies {found.write.tensor} in place "
            f"after ctx.save_for_backward saved it (line {found.saved_line})",
            method.file,
            found.write.line,
        )
        for found in writes_after_save(method)
    ]


def _non_tensor(context: CaseContext, argument: SavedArgument) -> str | None:
    if argument.constant:
        return "a literal"
    index = argument.input_index
    if index is None:
        return None
    if index < len(context.arguments):
        value = context.arguments[index]
    else:
        name = context.target.argument_name(index)
        if name is None or name not in context.target.defaults:
            return None
        value = context.target.defaults[name]
    if value is None or isinstance(value, torch.Tensor):
        return None
    return f"{context.describe_argument(index)}, a {type(value).__name__} in this case"


def _crash_finding(crash: UserCodeError, method: Method | None, calls: list[SaveCall]) -> RuleHit:
    """forward crashed in save_for_backward on something the static rule could not judge."""
    message = f"forward raised TypeError: {crash.error}"
    line = calls[0].line if calls else (method.line if method else None)
    position = re.search(r"argument (\d+)", str(crash.error))
    if len(calls) == 1 and not calls[0].starred and position:
        arguments = calls[0].arguments
        if int(position.group(1)) < len(arguments):
            message += f" (`{arguments[int(position.group(1))].code}`)"
    return RuleHit("GV105", Status.FAIL, message, method.file if method else None, line)
