"""Isolation: a case that kills or hangs its process fails alone; the rest of the run goes on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradverify.run import allocator, forkserver, session
from gradverify.spec.load import load_spec_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    entries = load_spec_file(ROOT / "tests" / "specs" / "hostile.yaml")
    options = session.RunOptions(cache=False, jobs=2)
    return session.run(entries, options)


def test_a_segfault_in_backward_fails_that_check_and_says_where(hostile_report, only):
    result = only(
        hostile_report, target="tests.functions.hostile:SegfaultInBackward", check="backward"
    )
    assert result.status.value == "fail"
    assert "SIGSEGV" in result.message and "in backward" in result.message
    later = only(
        hostile_report,
        target="tests.functions.hostile:SegfaultInBackward",
        check="finite_difference",
    )
    assert later.status.value == "skip"
    before = only(
        hostile_report, target="tests.functions.hostile:SegfaultInBackward", check="forward"
    )
    assert before.status.value == "pass"  # what ran before the crash is kept


def test_an_infinite_loop_times_out_in_forward(hostile_report, only):
    result = only(
        hostile_report, target="tests.functions.hostile:LoopsForeverInForward", check="forward"
    )
    assert result.status.value == "fail"
    assert "timed out after 2 s in forward" in result.message


def test_os_exit_is_a_failure_with_its_exit_code(hostile_report, only):
    result = only(hostile_report, target="tests.functions.hostile:ExitsInForward", check="forward")
    assert result.status.value == "fail"
    assert "exited with code 7" in result.message


def test_a_correct_function_in_the_same_run_passes(hostile_report, find):
    results = find(hostile_report, target="tests.functions.correct:Square")
    assert [r.status.value for r in results] == ["pass", "pass", "pass"]


def test_the_report_order_is_the_spec_order(hostile_report):
    targets = []
    for result in hostile_report.results:
        if not targets or targets[-1] != result.target:
            targets.append(result.target)
    assert [t.rsplit(":", 1)[1] for t in targets] == [
        "SegfaultInBackward",
        "Square",
        "LoopsForeverInForward",
        "ExitsInForward",
    ]


def test_isolated_and_in_process_runs_agree(in_repo):
    entries = load_spec_file(ROOT / "specs" / "examples.yaml")
    isolated = session.run(entries, session.RunOptions(cache=False, jobs=2))
    in_process = session.run(entries, session.RunOptions(cache=False, isolation=False))

    def plain(report):
        return [(r.target, r.case, r.check, r.status, r.message, r.element) for r in report.results]

    assert plain(isolated) == plain(in_process)


def test_a_target_error_in_a_worker_is_a_user_error(in_repo, tmp_path):
    from gradverify.errors import GradverifyError
    from gradverify.spec.load import parse_spec

    entries = parse_spec("target: tests.functions.correct:Nope\ncases: [{name: a}]\n", "s.yaml")
    with pytest.raises(GradverifyError) as raised:
        session.run(entries, session.RunOptions(cache=False, jobs=1))
    assert "did you mean" in raised.value.render() or "has no attribute" in raised.value.render()


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
def test_workers_are_forked_from_one_server_that_imported_torch_once(in_repo):
    """Isolation costs a fork, not an import: every worker is a child of the one server."""
    from gradverify.run.pool import WorkerPool

    with WorkerPool(2, threads=1) as pool:
        first, second = pool._start(), pool._start()
        server = forkserver.server().process.pid
        assert _parent_of(first.process.pid) == server
        assert _parent_of(second.process.pid) == server
    entries = load_spec_file(ROOT / "tests" / "specs" / "processes" / "two_correct.yaml")
    report = session.run(entries, session.RunOptions(cache=False, jobs=2))
    assert {r.status.value for r in report.results} == {"pass"}
    assert forkserver.server().process.pid == server  # the same server, not a new import


def test_a_worker_runs_in_the_current_directory_even_if_it_changed(tmp_path, monkeypatch):
    """The server lives on across runs of one process (as under pytest): a worker takes the
    parent's directory, path and environment at its fork, not the server's."""
    forkserver.server()  # started here, before the move
    (tmp_path / "gvmoved.py").write_text(
        "import torch\n\n\n"
        "class Twice(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 2\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n"
        "        return grad_output * 2\n"
    )
    monkeypatch.chdir(tmp_path)
    from gradverify.spec.load import parse_spec

    text = "target: gvmoved:Twice\nchecks: [forward, backward]\ncases: [{name: a, inputs: [{shape: [3]}]}]\n"
    report = session.run(parse_spec(text, "s.yaml"), session.RunOptions(cache=False, jobs=1))
    assert [r.status.value for r in report.results] == ["pass", "pass"]


def test_a_zero_config_check_imports_torch_only_in_the_server(tmp_path):
    """The parent infers nothing itself: inference runs in a worker, so one import in all."""
    code = (
        "import sys\n"
        "from gradverify.cli import main\n"
        "sys.argv = ['gradverify', 'check', 'gradverify.examples.swish:Swish', '--no-cache']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print('TORCH', 'torch' in sys.modules, code, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert "TORCH False 0" in done.stderr, done.stderr
    assert "inputs inferred from forward's signature" in done.stdout


def test_zero_config_a_forward_that_crashes_while_inferring_is_a_clear_error(in_repo):
    """Inference runs the user's forward: in a worker, its crash is a message, not our death."""
    from gradverify.errors import GradverifyError

    with pytest.raises(GradverifyError) as raised:
        session.infer_entries(
            ["tests.functions.hostile:ExitsInForward"], session.RunOptions(cache=False)
        )
    message = raised.value.render()
    assert "cannot infer inputs for tests.functions.hostile:ExitsInForward" in message
    assert "exited with code 7" in message


def test_a_worker_tells_the_parent_which_checks_a_case_runs(in_repo):
    from gradverify.spec.load import parse_spec

    spec = "target: tests.functions.custom_ops:gradverify_tests::scale\ncases: [{name: a, inputs: [{shape: [3]}]}]\n"
    told = []
    options = session.RunOptions(cache=False, jobs=1)
    session.run(parse_spec(spec, "s.yaml"), options, listener=lambda task, kind, value: (
        told.append(value) if kind == "checks" else None
    ))  # fmt: skip
    assert len(told) == 1 and "compile" in told[0]  # a custom op's default checks


def test_a_custom_op_whose_process_ends_skips_the_checks_the_worker_said_it_runs(in_repo):
    from gradverify.spec.load import parse_spec

    spec = (
        "target: tests.functions.hostile:gradverify_tests::exits_in_backward\n"
        "cases: [{name: a, inputs: [{shape: [3]}]}]\n"
    )
    report = session.run(parse_spec(spec, "s.yaml"), session.RunOptions(cache=False, jobs=1))
    by_check = {result.check: result for result in report.results}
    assert by_check["backward"].status.value == "fail"
    assert "7" in by_check["backward"].message
    # compile runs after backward: the parent knows of it from the worker, not by a guess
    assert by_check["compile"].status.value == "skip"


def test_the_fork_servers_preload_leaves_out_what_only_exploring_uses(fresh_python):
    """Every run waits for the server's imports: the explore search (its shrinker, draws and
    YAML snippet writer) is imported by a run that explores, not by every run's server."""
    code = (
        "import sys\n"
        "from gradverify.run.forkserver import PRELOAD\n"
        "for module in PRELOAD:\n    __import__(module)\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradverify.engine.explore.')))\n"
    )
    assert fresh_python(code) == "[]"


def test_the_fork_server_imports_without_collecting_garbage(fresh_python):
    """Every run waits for the server's imports: with the collector on, torch, sympy and the
    engine set off four full collections over a growing heap (0.3-0.4 s of each start)."""
    code = (
        "import gc\n"
        "from gradverify.run import forkserver\n"
        "forkserver.prepare()\n"
        "print(gc.get_stats()[2]['collections'], gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    assert fresh_python(code) == "0 False True"


@pytest.mark.parametrize("enabled", [True, False])
def test_without_isolation_the_engine_is_imported_without_collecting_garbage(fresh_python, enabled):
    """--no-isolation imports what the server would, as it would; the collector is then as
    the process had it, for the user's code."""
    code = (
        "import gc\n"
        f"gc.enable() if {enabled} else gc.disable()\n"
        "from gradverify.run import session\n"
        "session.import_the_engine()\n"
        "print(gc.get_stats()[2]['collections'], gc.isenabled())\n"
    )
    assert fresh_python(code) == f"0 {enabled}"


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
def test_the_fork_server_ends_without_tearing_its_interpreter_down(tmp_path, monkeypatch):
    """Every run waits to reap the server: it ends at once when the parent lets go, rather than
    unwinding an interpreter that holds torch (an atexit hook there would run in a teardown)."""
    ran = tmp_path / "teardown-ran"
    (tmp_path / "sitecustomize.py").write_text(
        f"import atexit, pathlib\natexit.register(pathlib.Path({str(ran)!r}).touch)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    server = forkserver.ForkServer()
    try:
        worker, connection = server.fork(threads=1)  # the server has started and preloaded
        connection.close()
        worker.join(timeout=60)
        worker.close()
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert not ran.exists()


PROBE = """
import sys

import torch

SEEN = {seen!r}


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with open(SEEN, "a") as seen:  # what the worker had imported before any check ran
            seen.write(str("torch._dynamo" in sys.modules) + "\\n")
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
"""


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
def test_a_run_that_compiles_has_the_server_import_dynamo_once_for_its_workers(
    tmp_path, monkeypatch
):
    """`compile` imports torch._dynamo (0.6 s of CPU): the server imports it before forking a
    run's workers, rather than each worker for itself."""
    from gradverify.spec.load import parse_spec

    seen = tmp_path / "seen.txt"
    (tmp_path / "gvprobe.py").write_text(PROBE.format(seen=str(seen)))
    monkeypatch.chdir(tmp_path)
    text = "target: gvprobe:Twice\nchecks: [forward, compile]\ncases: [{name: a, inputs: [{shape: [3]}]}]\n"
    report = session.run(parse_spec(text, "s.yaml"), session.RunOptions(cache=False, jobs=1))
    # (compile warns of a graph break: forward writes a file)
    assert [r.check for r in report.results] == ["forward", "compile"]
    assert seen.read_text().splitlines()[0] == "True"


@pytest.mark.parametrize(
    ("spec", "imports"),
    [
        ("target: gvprobe:Twice\n", []),
        ("target: gvprobe:Twice\nextra_checks: [compile]\n", ["torch._dynamo"]),
        ("target: gvprobe:Twice\nchecks: [forward, compile]\n", ["torch._dynamo"]),
        ("target: op:gvprobe::twice\n", ["torch._dynamo"]),  # an op runs compile by default
        ("target: op:gvprobe::twice\nchecks: [forward]\n", []),
    ],
)
def test_what_the_server_imports_for_a_run_follows_the_checks_it_runs(spec, imports):
    from gradverify.run.tasks import Task
    from gradverify.spec.load import parse_spec

    text = spec + "cases: [{name: a, inputs: [{shape: [3]}]}]\n"
    tasks = [Task(0, entry, "a", 0) for entry in parse_spec(text, "s.yaml")]
    assert session._heavy_imports(tasks) == imports


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
def test_the_server_loads_torch_with_huge_pages_whoever_started_it(monkeypatch):
    """The console script asks for transparent huge pages before torch loads (faulting 10⁷-
    element buffers in 4 KB pages doubled the system time); the pytest plugin and the Python
    API start the server without the console script, so the server asks for them itself."""
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    server = forkserver.ForkServer()
    try:
        worker, connection = server.fork(threads=1)  # the server has started and loaded torch
        environ = Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")
        connection.close()
        worker.join(timeout=60)
        worker.close()
    finally:
        server.stop()
    assert b"THP_MEM_ALLOC_ENABLE=1" in environ


# A Function whose forward appends a line from probe() (defined after this, per test) to SEEN.
MALLOC_PROBE = """
import ctypes
import os

import torch

SEEN = {seen!r}


def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with open(SEEN, "a") as seen:
            seen.write(probe() + "\\n")
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
"""


def _probed_in_a_server_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, probe: str, checks: str
) -> tuple[list[str], list[str]]:
    """The statuses of a run of MALLOC_PROBE's Function with `probe` (the source of its probe
    function), in workers of a fork server started without the user's malloc settings, and
    the lines its forward wrote."""
    from gradverify.spec.load import parse_spec

    for name in (*allocator._USER_SETTINGS, "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    seen = tmp_path / "seen.txt"
    (tmp_path / "gvmalloc.py").write_text(MALLOC_PROBE.format(seen=str(seen)) + probe)
    monkeypatch.chdir(tmp_path)
    server = forkserver.ForkServer()
    monkeypatch.setattr(forkserver, "_server", server)
    text = f"target: gvmalloc:Twice\nchecks: {checks}\ncases: [{{name: a, inputs: [{{shape: [3]}}]}}]\n"
    try:
        report = session.run(parse_spec(text, "s.yaml"), session.RunOptions(cache=False, jobs=1))
    finally:
        server.stop()
    return [r.status.value for r in report.results], seen.read_text().splitlines()


HEAP_PROBE = """
FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
          "fordblks", "keepcost")


class MallInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS]


mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo


def probe():
    mapped = mallinfo2().hblkhd
    buffer = torch.ones(8 * 2**20, dtype=torch.float64)  # 64 MB, past glibc's mmap threshold
    mapped = mallinfo2().hblkhd - mapped
    del buffer
    return f"{mapped} {mallinfo2().fordblks}"
"""


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
@pytest.mark.skipif(not allocator._is_glibc(), reason="malloc is not glibc's")
def test_a_worker_reuses_the_large_buffers_torch_frees(tmp_path, monkeypatch):
    """A 10⁷-element check frees hundreds of 80 MB buffers; in a worker each is served from the
    heap and kept once freed, rather than mapped afresh and faulted in page by page."""
    statuses, lines = _probed_in_a_server_of_its_own(tmp_path, monkeypatch, HEAP_PROBE, "[forward]")
    assert statuses == ["pass"]
    mapped, free = map(int, lines[0].split())
    assert mapped == 0  # from the heap, not a mapping of its own
    assert free >= 64 * 2**20  # and still there, free, once torch let it go


RELEASE_PROBE = """
def probe():
    if not os.path.getsize(SEEN):  # the first call: 64 MB written, then freed
        buffer = torch.ones(8 * 2**20, dtype=torch.float64)
        del buffer
    return str(resident_mb())
"""


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
@pytest.mark.skipif(not allocator._is_glibc(), reason="malloc is not glibc's")
def test_a_worker_gives_back_what_a_check_freed_before_the_next_check(tmp_path, monkeypatch):
    """Kept for reuse within a check, freed memory goes back between checks, so the holes one
    check leaves do not add to the next one's peak."""
    statuses, lines = _probed_in_a_server_of_its_own(
        tmp_path, monkeypatch, RELEASE_PROBE, "[forward, backward]"
    )
    assert statuses == ["pass", "pass"]
    *before_the_trim, in_backwards_check = map(float, lines)
    assert before_the_trim, "settling and forward's check called forward"
    # Against the peak of the readings before the trim, not the first one: what the worker
    # keeps alive between them (backward's check imports coverage.py and measures, ~6 MB)
    # is no hole left by a free. Without the trim the last reading is above that peak.
    assert in_backwards_check < max(before_the_trim) - 48


@pytest.mark.skipif(not forkserver.AVAILABLE, reason="workers are spawned without pidfds")
def test_a_worker_collects_garbage_as_any_process_does(tmp_path, monkeypatch):
    """The collector is off in the server only: the user's code in a worker has it on."""
    probe = "def probe():\n    import gc\n    return str(gc.isenabled())\n"
    statuses, lines = _probed_in_a_server_of_its_own(tmp_path, monkeypatch, probe, "[forward]")
    assert statuses == ["pass"]
    assert set(lines) == {"True"}
