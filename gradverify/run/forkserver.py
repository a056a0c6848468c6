"""A process that imports torch and gradverify's engine once, then forks a worker on request.

Isolation then costs a fork, not an import. The server never runs a torch op: forking after
torch has started its intra-op threads can deadlock (OpenMP); forking after an import cannot.
Server and workers never see SIGINT: the server starts with it blocked and ignores it before
anything else (gradverify.run.interrupts), and its workers inherit that. The parent that owns them
kills them, so Ctrl-C ends a run with one message rather than a traceback from every worker,
even when it comes while the server is still importing torch. When the parent goes away, even
killed, the server kills and reaps its workers and exits, so no process outlives the command.

Parent and server talk over a SOCK_SEQPACKET socket pair, one pickled message per packet:
("fork", threads, cwd, sys.path, environ) with the worker's end of its pipe attached; back
come ("ready",) once, ("forked", pid) and ("exited", pid, returncode).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import pickle
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection, Pipe
from typing import Any

from gradverify.run import allocator, interrupts

# What a worker needs before its first case; imported once, in the server.
PRELOAD = (
    "torch",
    "torch.fx.experimental.symbolic_shapes",  # torch imports it on the first autograd.grad
    "gradverify.engine.case",
    "gradverify.run.worker",
    "gradverify.inference.zeroconfig",
    "gradverify.inference.from_signature",
)
# pidfds (Linux 5.3+) make a forked worker's end observable from the parent; elsewhere the
# pool spawns its workers.
AVAILABLE = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
_PACKET = 1 << 20
_STOP_LIMIT = 5.0


class ServerError(Exception):
    """The fork server could not start or went away."""


class ServedProcess:
    """A worker forked by the server: the parts of multiprocessing's Process the pool uses."""

    def __init__(self, server: ForkServer, pid: int, pidfd: int) -> None:
        self.server = server
        self.pid = pid
        # A pidfd the server opened before it could reap the process: readable once the
        # process has ended, and signals sent through it never reach a reused pid.
        self.sentinel = pidfd
        self._exitcode: int | None = None

    @property
    def exitcode(self) -> int | None:
        if self._exitcode is None and not self.is_alive():
            self._exitcode = self.server.exitcode(self.pid)
        return self._exitcode

    def is_alive(self) -> bool:
        if self._exitcode is not None or self.sentinel < 0:
            return False
        return not select.select([self.sentinel], [], [], 0)[0]

    def kill(self) -> None:
        if self.is_alive():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.sentinel, signal.SIGKILL)

    def join(self, timeout: float | None = None) -> None:
        if self.sentinel >= 0 and select.select([self.sentinel], [], [], timeout)[0]:
            _ = self.exitcode

    def close(self) -> None:
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


class ForkServer:
    """The parent's handle on one server process."""

    def __init__(self) -> None:
        self.control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code = (
            f"import sys; sys.path[:] = {list(sys.path)!r}; "
            f"from gradverify.run.forkserver import main; main({server_end.fileno()})"
        )
        # Huge pages for torch's large buffers, as gradverify.cli.main asks for them in its own
        # process: torch reads this once, as it loads, and the server loads it for every
        # worker, whoever started the server (the command, the pytest plugin, the Python API).
        environment = {**os.environ}
        environment.setdefault("THP_MEM_ALLOC_ENABLE", "1")
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=[server_end.fileno()],
            stdin=subprocess.DEVNULL, env=environment,
        )  # fmt: skip
        server_end.close()
        self.owner = os.getpid()
        self.ready = False
        self.exitcodes: dict[int, int] = {}
        self.lock = threading.Lock()

    def fork(self, threads: int) -> tuple[ServedProcess, Connection]:
        """A new worker serving cases on the returned connection (gradverify.run.worker.serve)."""
        parent_end, child_end = Pipe()
        request = ("fork", threads, os.getcwd(), list(sys.path), dict(os.environ))
        with self.lock:
            if not self.ready:
                self._expect("ready")
                self.ready = True
            try:
                socket.send_fds(self.control, [pickle.dumps(request)], [child_end.fileno()])
            except OSError as error:
                raise ServerError(f"the fork server went away ({error})") from None
            finally:
                child_end.close()
            (pid,), fds = self._expect("forked")
        return ServedProcess(self, pid, fds[0]), parent_end

    def preload(self, modules: Sequence[str]) -> None:
        """Have the server import `modules` before its next fork, so that the workers forked
        from then on start with them: a heavy import made once, not once per worker (nor, in a
        process that runs many times, once per run). Best effort: a module the server cannot
        import is left to the worker that needs it, which says why."""
        with self.lock, contextlib.suppress(OSError):  # gone: the next fork says so
            self.control.sendall(pickle.dumps(("preload", tuple(modules))))

    def exitcode(self, pid: int) -> int | None:
        """The return code of a worker that has ended (None if the server went away)."""
        with self.lock:
            with contextlib.suppress(ServerError):
                while pid not in self.exitcodes:
                    self._expect("exited", timeout=_STOP_LIMIT)
            return self.exitcodes.pop(pid, None)

    def stop(self) -> None:
        """End the server and every worker it forked; reap the server (idempotent)."""
        if not self.ready:  # still importing, so no worker yet: no need to wait for it
            with contextlib.suppress(OSError):
                self.process.kill()
        with contextlib.suppress(OSError):
            self.control.close()
        try:
            self.process.wait(timeout=_STOP_LIMIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _expect(self, kind: str, timeout: float | None = None) -> tuple[tuple[Any, ...], list[int]]:
        """Read messages until one of `kind`, keeping exit codes that arrive in between."""
        while True:
            if timeout is not None and not select.select([self.control], [], [], timeout)[0]:
                raise ServerError(f"no answer from the fork server in {timeout:g} s")
            try:
                packet, fds, _, _ = socket.recv_fds(self.control, _PACKET, 1)
            except OSError as error:
                raise ServerError(f"the fork server went away ({error})") from None
            if not packet:
                raise ServerError(
                    f"the fork server exited with code {self.process.poll()} (see above)"
                )
            message = pickle.loads(packet)
            if message[0] == "exited":
                self.exitcodes[message[1]] = message[2]
            if message[0] == kind:
                return tuple(message[1:]), fds
            for fd in fds:  # a worker whose fork request was interrupted: the server ends it
                os.close(fd)


_server: ForkServer | None = None


def server() -> ForkServer:
    """This process's fork server, started on first use and stopped when the process exits."""
    global _server
    if _server is not None and (_server.owner != os.getpid() or _server.process.poll() is not None):
        _server = None  # inherited through a fork, or died: start another
    if _server is None:
        atexit.register(stop)  # first: a Ctrl-C held during the start is raised as it ends
        with interrupts.deferred():  # the server is born with SIGINT blocked
            _server = ForkServer()
    return _server


def stop() -> None:
    """Stop this process's fork server, if it started one (idempotent).

    A Ctrl-C waits until the server is reaped: cut short, the stop would leave the server
    running and print a traceback from an atexit callback."""
    global _server
    with interrupts.deferred():
        if _server is not None and _server.owner == os.getpid():
            _server.stop()
        _server = None


def main(control_fd: int) -> None:
    """The server process: preload, then fork workers until the parent closes its end."""
    interrupts.ignore_in_child()
    control = socket.socket(fileno=control_fd)
    try:
        prepare()
    except BaseException:
        traceback.print_exc()
        return
    children: dict[int, int] = {}  # pidfd -> pid
    try:
        _send(control, ("ready",))
        _serve(control, children)
    except OSError:  # the parent went away mid-message
        pass
    finally:  # the parent is gone: so are its workers
        _kill(children)
    # The parent waits to reap this process: tearing down an interpreter that holds torch
    # (its modules, finalizers and the frozen heap) took 0.2-0.3 s of every run's wall time,
    # and nothing of it matters to anyone.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _serve(control: socket.socket, children: dict[int, int]) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is not control:
                    _reap(key.fd, children, control, selector)
                    continue
                message, fds, _, _ = socket.recv_fds(control, _PACKET, 1)
                if not message:
                    return
                request = pickle.loads(message)
                if request[0] == "preload":
                    _preload(request[1])
                    continue
                pid = _fork(request, fds[0], control, selector, children)
                os.close(fds[0])
                pidfd = os.pidfd_open(pid)  # before any reaping: the pid cannot be reused yet
                children[pidfd] = pid
                selector.register(pidfd, selectors.EVENT_READ)
                socket.send_fds(control, [pickle.dumps(("forked", pid))], [pidfd])


def prepare() -> None:
    """Import what every worker needs, once, with the collector off from here on.

    As gc.freeze's documentation advises for a process that forks without exec: no collection
    in the server (while it imported torch, sympy and the engine, four full collections over
    a growing heap took 0.3-0.4 s of every run's start), everything imported frozen before
    the first fork, and the collector on again in each worker (_fork), where a collection
    then never touches, and so never copies, the server's pages.
    """
    gc.disable()
    allocator.keep_freed_memory()  # before torch allocates anything
    for module in PRELOAD:
        __import__(module)
    gradverify_checks = sys.modules["gradverify.checks"]
    for check_id in gradverify_checks.REGISTRY:  # every check now, not in a case's time limit
        gradverify_checks.get_check(check_id)
    gc.freeze()


def _preload(modules: Sequence[str]) -> None:
    """Import what a run's workers are about to need (no torch op runs: it is an import)."""
    for module in modules:
        try:
            __import__(module)
        except Exception:  # the worker that needs it imports it again and says why
            continue
    gc.freeze()


def _reap(
    pidfd: int, children: dict[int, int], control: socket.socket, selector: selectors.BaseSelector
) -> None:
    selector.unregister(pidfd)
    pid = children.pop(pidfd)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    _send(control, ("exited", pid, os.waitstatus_to_exitcode(status)))


def _fork(
    request: tuple[Any, ...],
    fd: int,
    control: socket.socket,
    selector: selectors.BaseSelector,
    children: dict[int, int],
) -> int:
    _, threads, cwd, path, environ = request
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:  # the worker: nothing of the server's may stay open in it
        gc.enable()  # off in the server only (prepare)
        selector.close()
        control.close()
        for pidfd in children:
            os.close(pidfd)
        os.chdir(cwd)
        sys.path[:] = path
        os.environ.clear()
        os.environ.update(environ)
        from gradverify.run.worker import serve

        serve(Connection(fd), threads)
    except SystemExit as exit:  # the user's code called sys.exit
        code = exit.code if isinstance(exit.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _kill(children: dict[int, int]) -> None:
    for pidfd in children:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    for pidfd, pid in children.items():
        os.waitpid(pid, 0)
        os.close(pidfd)


def _send(control: socket.socket, message: tuple[Any, ...]) -> None:
    control.sendall(pickle.dumps(message))
