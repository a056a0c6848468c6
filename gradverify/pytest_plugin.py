"""`pytest --gradverify PATH...`: every (target, case, check) of the specs as a pytest item.

Registered through the `pytest11` entry point, so pytest loads it in every run of the
environment: at import it touches nothing but pytest. Specs are read at collection (no
torch). One exception: a target written `module:Attr` whose spec lists no `checks:` is
loaded at collection, to know whether it is a custom op (which gets a `compile` item by
default, as `gradverify check` runs it).

The first item to run runs every selected case at once, as `gradverify check` does
(`gradverify.run.session`: one fork server, one pool of isolated workers, `-j` of them), and
each item reads its case's results. Under pytest-xdist, whose workers receive items one at a
time, each case runs in the xdist worker, in its process, when its first item does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from gradverify.pytest_batch import Batch
    from gradverify.results import Result
    from gradverify.spec.load import SpecEntry

MARKER = "gradverify"
# Whether each `module:Attr` target that needs knowing is a custom op (None: does not load).
CUSTOM_OPS = pytest.StashKey[dict[str, "bool | None"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradverify", "gradverify: verify autograd Functions from specs")
    group.addoption(
        "--gradverify",
        nargs="*",
        metavar="PATH",
        default=None,
        help="Also run the gradverify specs under these paths (spec files or directories; "
        "none: the ini option gradverify_paths, else specs/), one item per target[case]::check.",
    )
    group.addoption(
        "--gradverify-record",
        action="store_true",
        default=False,
        help="Record every autograd Function and custom op the tests call, and write a spec "
        "case per distinct signature at the end (as `gradverify record -- pytest`).",
    )
    parser.addini(
        "gradverify_paths",
        type="paths",
        default=[],
        help="Spec paths for `--gradverify` given without paths.",
    )
    group.addoption(
        "--gradverify-jobs",
        type=int,
        default=None,
        metavar="N",
        help="Cases run in parallel by --gradverify (as `gradverify check -j`) [default: "
        "[tool.gradverify] jobs, else the number of cores].",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(target, case, check): an item run by gradverify on one case of a spec",
    )
    if config.getoption("gradverify_record", False):
        from gradverify.record.session import start

        start(config)
    if _spec_paths(config) is not None:
        from gradverify.pytest_batch import start_early

        start_early(config)  # its torch import overlaps collection, the specs' and the tests'


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("gradverify_record", False):
        from gradverify.record.session import finish

        finish(session.config)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.getoption("gradverify_record", False):
        from gradverify.record.session import report

        report(terminalreporter, config)


@pytest.hookimpl(tryfirst=True)  # before -k, -m and --deselect filter the items
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    paths = _spec_paths(config)
    if paths is None:
        return
    from gradverify.pytest_batch import custom_ops
    from gradverify.spec.discover import spec_files

    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise pytest.UsageError(f"--gradverify: no such file or directory: {path}")
        files = spec_files(path)
        if not files:
            raise pytest.UsageError(f"--gradverify: no spec files (*.yaml, *.yml) in {path}")
        found.extend(file.resolve() for file in files)
    # Which targets are custom ops, asked of one worker for all files: pytest's process
    # never imports torch (nor the user's modules) to collect.
    config.stash[CUSTOM_OPS] = custom_ops([_shown(file, config) for file in found], config)
    for file in found:
        items.extend(session.genitems(SpecFile.from_parent(session, path=file)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every selected case, to run together when the first of their items runs."""
    if _spec_paths(session.config) is None or hasattr(session.config, "workerinput"):
        return  # not asked, or an xdist worker (items come one at a time)
    from gradverify.pytest_batch import Batch

    cases = [item.parent for item in session.items if isinstance(item, CheckItem)]
    selected = [case for case in dict.fromkeys(cases) if isinstance(case, SpecCase)]
    batch = Batch(
        [(case.entry, case.case) for case in selected],
        session.config.invocation_params.dir,
        session.config.getoption("gradverify_jobs", None),
    )
    for case in selected:
        case.batch = batch


def _spec_paths(config: pytest.Config) -> list[Path] | None:
    """The paths given to --gradverify, or None when it is not given (the plugin is inert)."""
    given: list[str] | None = config.getoption("gradverify")
    if given is None:
        return None
    if given:
        return [config.invocation_params.dir / path for path in given]
    configured: list[Path] = config.getini("gradverify_paths")
    return configured or [config.invocation_params.dir / "specs"]


class SpecFile(pytest.File):
    """One spec file: a collector per target, holding a collector per case."""

    def collect(self) -> Iterator[SpecTarget]:
        from gradverify.spec.config import load_config, with_defaults
        from gradverify.spec.plan import make_plan

        # As `gradverify check` runs it: [tool.gradverify] fills what the spec leaves unset.
        configured = load_config(self.config.invocation_params.dir)
        seen: dict[str, int] = {}
        for entry in with_defaults(make_plan([_shown(self.path, self.config)]).entries, configured):
            name = _node_name(entry.spec.target or "")
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:  # the same target twice in one file
                name = f"{name}#{seen[name]}"
            yield SpecTarget.from_parent(self, name=name, entry=entry)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        return _user_error(excinfo) or super().repr_failure(excinfo)


class SpecTarget(pytest.Collector):
    """One Function's spec: a collector per case."""

    def __init__(self, *, entry: SpecEntry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.checks = _checks(entry, self.config.stash.get(CUSTOM_OPS, {}))

    def collect(self) -> Iterator[SpecCase]:
        for case in self.entry.spec.cases:
            yield SpecCase.from_parent(self, name=_node_name(case.name), case=case.name)


class SpecCase(pytest.Collector):
    """One case of one target: an item per check, all answered by one run of the case."""

    def __init__(self, *, case: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert isinstance(self.parent, SpecTarget)
        self.entry, self.case = self.parent.entry, case
        self._results: list[Result] | None = None
        self._error: BaseException | None = None
        self.batch: Batch | None = None  # set at the end of collection, unless under xdist

    @property
    def title(self) -> str:
        """`target[case]`, as reports show it."""
        return f"{self.entry.spec.target}[{self.case}]"

    def collect(self) -> Iterator[CheckItem]:
        target = self.entry.spec.target or ""
        assert isinstance(self.parent, SpecTarget)
        for check in self.parent.checks:
            item = CheckItem.from_parent(self, name=check)
            item.add_marker(pytest.mark.gradverify(target=target, case=self.case, check=check))
            yield item

    def results(self) -> list[Result]:
        """The case's results, from running it once for all its items (in this process)."""
        if self._error is not None:
            raise self._error
        if self._results is None:
            try:
                self._results = self._run()
            except Exception as error:
                self._error = error
                raise
        return self._results

    def _run(self) -> list[Result]:
        if self.batch is not None:
            return self.batch.results(self.entry, self.case)
        from dataclasses import replace

        from gradverify.run import session

        case = next(c for c in self.entry.spec.cases if c.name == self.case)
        entry = replace(self.entry, spec=self.entry.spec.model_copy(update={"cases": [case]}))
        options = session.RunOptions(isolation=False, cache=False)
        return list(session.run([entry], options).results)


class CheckItem(pytest.Item):
    """One check on one case: fails with gradverify's explanation, skips and warns alike."""

    def runtest(self) -> None:
        from gradverify.api import warn_about
        from gradverify.results import Status

        assert isinstance(self.parent, SpecCase)
        results = [r for r in self.parent.results() if r.check == self.name]
        warn_about(results)
        failed = [r for r in results if r.status is Status.FAIL]
        if failed:
            raise CheckFailed(failed)
        if results and all(r.status is Status.SKIP for r in results):
            pytest.skip(_reason(results))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CheckFailed):
            from gradverify.api import failures_explained

            failed = excinfo.value.results
            writer = self.config.get_terminal_writer()
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            # The first line is what pytest's short summary shows.
            headline = f"{failed[0].message}{more}"
            return f"{headline}\n{failures_explained(failed, min(writer.fullwidth, 120), writer.hasmarkup)}"
        return _user_error(excinfo) or super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        assert isinstance(self.parent, SpecCase)
        entry = self.parent.entry
        line = entry.case_lines.get(self.parent.case, entry.line)
        return self.path, (line - 1 if line else None), f"{self.parent.title}::{self.name}"


class CheckFailed(Exception):
    """A check's failing results, explained by repr_failure."""

    def __init__(self, results: Sequence[Result]) -> None:
        super().__init__("; ".join(r.message for r in results))
        self.results = results


def _checks(entry: SpecEntry, custom_ops: dict[str, bool | None]) -> list[str]:
    """The checks the engine runs on each case of the spec (gradverify.target.loaded.checks_of,
    which also decides what a worker reports it ran). A custom op's include `compile`; where
    the spec's name tells an op (`module:ns::name`, `op:ns::name`) or the checks are the same
    either way, the target is not loaded. Else `custom_ops` (a worker loaded the target) says,
    or the target is loaded here. A target that fails to load counts as no op (its items
    report the load error)."""
    from gradverify.pytest_batch import needs_loading

    spec = entry.spec
    if spec.target is None or not needs_loading(spec):
        return list(spec.checks_for(custom_op=False))  # the same checks either way
    from gradverify.spec.targets import parse_target

    form = parse_target(spec.target)
    if form is None or form.op is not None:
        return list(spec.checks_for(custom_op=form is not None))
    if spec.target in custom_ops:
        return list(spec.checks_for(custom_op=bool(custom_ops[spec.target])))
    from gradverify.target.loaded import checks_of
    from gradverify.target.loading import load_target

    try:
        target = load_target(spec.target)
    except Exception:  # the run says why it does not load, once per item, as for any target
        return list(spec.checks_for(custom_op=False))
    return list(checks_of(spec, target))


def _shown(path: Path, config: pytest.Config) -> str:
    """The spec's path as results and messages show it: relative to where pytest started."""
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)


def _node_name(name: str) -> str:
    # pytest reads "::" as a separator and "[" as the start of an item's parameters.
    return name.replace("::", ":").replace("[", "(").replace("]", ")")


def _reason(results: Sequence[Result]) -> str:
    return "; ".join(dict.fromkeys(r.message for r in results))


def _user_error(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """A spec or target error as the CLI words it, without gradverify's traceback."""
    from gradverify.errors import GradverifyError

    if isinstance(excinfo.value, GradverifyError):
        return f"gradverify: {excinfo.value.render()}"
    return None
