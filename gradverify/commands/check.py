"""`gradverify check`: specs, targets and packages -> one report, rendered, and its exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradverify.commands.options import FORMAT_NAMES, OutputFormat
from gradverify.commands.terminal import plea, tell, use_color, width
from gradverify.exitcodes import ExitCode

if TYPE_CHECKING:
    from gradverify.results import Report, Result
    from gradverify.run.coverage import PackageWork
    from gradverify.run.session import RunOptions
    from gradverify.spec.load import SpecEntry
    from gradverify.spec.plan import Plan


@dataclass(frozen=True)
class Scope:
    """How `check` reads its paths, and the flags that [tool.gradverify] must not override."""

    all_files: bool = False
    changed_files: bool = False
    jobs: int | None = None
    extra_checks: tuple[str, ...] = ()  # --extra-check
    require_specs: bool = False


def run_check(
    paths: list[str],
    spec: str | None,
    options: RunOptions,
    output_format: OutputFormat | None,
    quiet: bool,
    scope: Scope,
    output: str | None = None,
    verbose: bool = False,
) -> int:
    from gradverify.run import failures, session

    session.start_early(options)
    from gradverify.commands.offers import offers
    from gradverify.run.progress import progress_listener
    from gradverify.spec.changed_files import resolve
    from gradverify.spec.config import load_config, with_defaults, with_extra_checks
    from gradverify.spec.plan import Plan, make_plan

    # Flags win over [tool.gradverify]; spec keys win over it too (config.with_defaults).
    config = load_config(formats=FORMAT_NAMES)
    output_format = output_format or OutputFormat(config.settings.format or OutputFormat.text.value)
    if scope.jobs is None and config.settings.jobs is not None:
        options = replace(options, jobs=config.settings.jobs)
    work = resolve(paths, config.spec_paths, scope.all_files, scope.changed_files)
    plan = (
        make_plan(work.arguments, spec, config.spec_paths, keep_going=True)
        if work.arguments
        else Plan()
    )
    entries = [*plan.entries, *work.entries]
    _nothing_but_unread(plan, entries)
    notes = [note for note in (config.note, *work.notes, *plan.notes) if note]
    if not scope.changed_files and not work.entries:
        notes.extend(offers(paths))
    inferred, failed = session.infer_entries(plan.bare_targets, options, keep_going=True)
    failed[:0] = [failures.unread(error) for error in plan.unread]
    for entry, note in inferred:
        entries.append(entry)
        notes.append(note)
    package = _package_work(plan, entries, options, scope.require_specs)
    if package is not None:
        entries.extend(package.entries)
        notes.extend(package.notes)
        failed.extend(package.failed)
    entries = with_extra_checks(with_defaults(entries, config), scope.extra_checks)
    terminal_format = OutputFormat.text if output is not None else output_format
    show_progress = terminal_format is OutputFormat.text and sys.stderr.isatty()
    # No terminal for a bar (CI, a log file): a line per finished target on a long run.
    lines = None if sys.stderr.isatty() else entries
    with progress_listener(show_progress, lines=lines) as listener:
        try:
            report = session.run(entries, options, notes, listener, keep_going=True)
        except session.RunInterrupted as interrupted:  # what finished, then exit 130
            report = _complete(interrupted.report, failed, package)
            _emit(report, output_format, output, quiet, verbose)
            raise
    report = _complete(report, failed, package)
    _nothing_but_usage_errors(report)
    _emit(report, output_format, output, quiet, verbose)
    # Specs, targets or packages named (not a pre-commit run's changed files): checking
    # none of them is no success.
    asked = bool(work.arguments) and not scope.changed_files
    return exit_code(report, asked)


def exit_code(report: Report, asked: bool = False) -> int:
    """3 if gradverify failed on a case (internal), else 2 if a spec or target could not be
    used, else 1 if anything failed, else 5 if something was `asked` for and no check ran
    (each target skipped or without inputs), else 0. Whatever made it, every result is
    reported."""
    if report.usage_errors:
        _refuse(report.usage_errors)
    if report.internal_errors:
        _plead(len(report.internal_errors))
        return ExitCode.INTERNAL
    if report.usage_errors:
        return ExitCode.USAGE
    if not report.passed:
        return ExitCode.FAILED
    return ExitCode.NO_TESTS if asked and not report.checked else ExitCode.OK


def _nothing_but_unread(plan: Plan, entries: list[SpecEntry]) -> None:
    """Every spec file given failed to read, and nothing else is to be checked: their
    errors, as one message (exit 2), as for a single spec file."""
    from gradverify.errors import SpecError

    if plan.unread and not (entries or plan.bare_targets or plan.code_arguments):
        raise SpecError([issue for error in plan.unread for issue in error.issues])


def _nothing_but_usage_errors(report: Report) -> None:
    """Nothing ran but bad input (a single spec whose target does not load): its message,
    with no report, exit 2, as for any error of usage."""
    from gradverify.errors import GradverifyError

    nothing_else = report.coverage is None and len(report.usage_errors) == len(report.results)
    if report.results and nothing_else:
        raise GradverifyError("\n".join(_usage_messages(report.usage_errors)))


def _usage_messages(results: tuple[Result, ...]) -> list[str]:
    """Each usage error once, its message and details."""
    return list(dict.fromkeys("\n".join((r.message, *r.details)) for r in results))


def _refuse(results: tuple[Result, ...]) -> None:
    """After the report: what could not be used, each once, on stderr (exit 2)."""
    messages = _usage_messages(results)
    tell("".join(f"error: {message.splitlines()[0]}\n" for message in messages))
    count = f"{len(messages)} spec(s) or target(s)" if len(messages) != 1 else "1 spec or target"
    tell(f"{count} could not be used (shown above); every other target was checked\n")


def _complete(report: Report, failed: list[Result], package: PackageWork | None) -> Report:
    """The run's report with the targets that failed before it (not loaded, or gradverify
    failed inferring their inputs) first, and a package's coverage."""
    coverage = package.coverage if package is not None else report.coverage
    return replace(report, results=(*failed, *report.results), coverage=coverage)


def _emit(
    report: Report, output_format: OutputFormat, output: str | None, quiet: bool, verbose: bool
) -> None:
    """The report on stdout (text when `output` is a file), and in `output` if given."""
    from gradverify.report import FORMATS, RenderOptions

    terminal_format = OutputFormat.text if output is not None else output_format
    render_options = RenderOptions(color=use_color(), width=width(), quiet=quiet, verbose=verbose)
    tell(FORMATS[terminal_format.value](report, render_options), "stdout")
    if output is not None:
        file_options = RenderOptions(quiet=quiet, verbose=verbose)
        write_report(output, FORMATS[output_format.value](report, file_options))


def _plead(errors: int) -> None:
    """After the report: gradverify's own errors, each shown above with its traceback."""
    cases = f"{errors} case(s)" if errors != 1 else "1 case"
    tell(plea(f" in {cases} (shown above with the traceback)") + "\n")


def _package_work(
    plan: Plan, given: list[SpecEntry], options: RunOptions, require_specs: bool
) -> PackageWork | None:
    """The Functions found in package arguments (`gradverify check mypkg`), or None."""
    from gradverify.errors import UsageError
    from gradverify.run.coverage import package_work

    if not plan.code_arguments:
        if require_specs:
            raise UsageError(
                "--require-specs needs a package or a directory of code to find Functions in, "
                "e.g. `gradverify check mypkg --require-specs`"
            )
        return None
    return package_work(plan.defined, given, options, require_specs)


def write_report(path: str, report: str) -> None:
    """`--output FILE`: the report in the chosen format, its directory made if need be."""
    from pathlib import Path

    from gradverify.errors import UsageError

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(report, encoding="utf-8")
    except OSError as error:
        where = f" ({error.filename})" if error.filename and error.filename != path else ""
        raise UsageError(f"cannot write --output {path}: {error.strerror}{where}") from None
