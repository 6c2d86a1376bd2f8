"""Helper processes forked from one that has already imported what they need.

A remote helper (model/storage/remote_helper_child.py) is a new interpreter that imports zarr and
obstore before it can answer: about half a second of a core for every remote store the window
opens. On Linux the first helper instead starts a *zygote*: a process that imports those modules
once and then forks a helper for each request, its pipes passed over a Unix socket with the
environment of the moment (a helper started by exec would see that environment too). The zygote
sends back a pidfd for each child, so a helper is killed by handle and a reused process id can never
be signalled. Where any of this is missing (another system, a zygote that cannot start or died)
:func:`start_helper` says so by returning None and the caller starts an interpreter as before.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
from typing import IO, Any

_LENGTH = struct.Struct(">I")
#: the command a helper runs when it is not forked (remote_helper.py) and the modules a zygote preloads
HELPER_COMMAND = "from ecpfs_viewer.model.storage.remote_helper_child import main; main()"
_ZYGOTE_COMMAND = "from ecpfs_viewer.model.storage.helper_zygote import serve; serve()"
#: seconds the zygote may take to answer a fork (it forks and replies; it does nothing else)
ANSWER_TIMEOUT_S = 30.0


#: set to 0, every helper is a new interpreter (to compare, or to rule the zygote out)
ZYGOTE_ENV = "ECPFS_HELPER_ZYGOTE"


def supported() -> bool:
    """Whether helpers are forked here: this system passes descriptors over sockets and signals
    processes by pidfd, and ECPFS_HELPER_ZYGOTE is not 0."""
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "pidfd_open")
            and hasattr(signal, "pidfd_send_signal") and os.environ.get(ZYGOTE_ENV, "").strip() != "0")


class ForkedHelper:
    """A helper forked by the zygote: its pipes and a handle to kill it (what the caller used of a Popen)."""

    def __init__(self, pid: int, pidfd: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self._pidfd, self.stdin, self.stdout = pid, pidfd, stdin, stdout

    def kill(self) -> None:
        """SIGKILL by pidfd: a helper that already ended (and was reaped) is not another process."""
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._pidfd)


class _Zygote:
    """This process's end of the zygote's socket; one fork asked at a time."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.process = subprocess.Popen([sys.executable, "-c", _ZYGOTE_COMMAND], stdin=theirs.fileno(),
                                            stdout=subprocess.DEVNULL, close_fds=True)
        finally:
            theirs.close()
        ours.settimeout(ANSWER_TIMEOUT_S)
        self.socket = ours
        self.lock = threading.Lock()

    def fork(self) -> ForkedHelper:
        """A new helper with this process's environment; OSError when the zygote cannot make one."""
        to_child_read, to_child_write = os.pipe()
        from_child_read, from_child_write = os.pipe()
        try:
            payload = pickle.dumps(dict(os.environ), protocol=pickle.HIGHEST_PROTOCOL)
            with self.lock:
                socket.send_fds(self.socket, [_LENGTH.pack(len(payload)) + payload],
                                [to_child_read, from_child_write])
                pid, pidfd = _read_answer(self.socket)
        except BaseException:
            for fd in (to_child_write, from_child_read):
                os.close(fd)
            raise
        finally:
            os.close(to_child_read)
            os.close(from_child_write)
        return ForkedHelper(pid, pidfd, os.fdopen(to_child_write, "wb"), os.fdopen(from_child_read, "rb"))

    def close(self) -> None:
        self.socket.close()  # the zygote ends when its socket closes; its helpers when their pipes do
        with contextlib.suppress(OSError):
            self.process.wait(timeout=5)


def _read_answer(sock: socket.socket) -> tuple[int, int]:
    data, fds, _flags, _addr = socket.recv_fds(sock, 8, 1)
    while len(data) < 8 and data:
        more = sock.recv(8 - len(data))
        if not more:
            break
        data += more
    if len(data) < 8 or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise OSError("the helper zygote ended")
    pid, error = struct.unpack(">ii", data)
    if error:
        os.close(fds[0])
        raise OSError(error, f"the helper zygote could not fork: {os.strerror(error)}")
    return pid, fds[0]


class _State:
    zygote: _Zygote | None = None
    broken = False  # no zygote could be started, or none could fork: helpers are interpreters


_STATE = _State()
_STATE_LOCK = threading.Lock()


def start_helper() -> ForkedHelper | None:
    """A helper forked by this process's zygote (started on the first call), or None where none
    can be: the caller then starts a helper interpreter itself."""
    if not supported():
        return None
    with _STATE_LOCK:
        if _STATE.broken:
            return None
        zygote = _STATE.zygote
        for _attempt in range(2):  # a zygote that died is replaced once
            if zygote is None:
                try:
                    zygote = _STATE.zygote = _Zygote()
                except OSError:
                    _STATE.broken = True
                    return None
            try:
                return zygote.fork()
            except OSError:
                _STATE.zygote = None
                with contextlib.suppress(OSError):
                    zygote.close()
                zygote = None
        _STATE.broken = True
        return None


# -- the zygote process ------------------------------------------------------------------------


def _reap(_signum: int, _frame: Any) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _receive(sock: socket.socket) -> tuple[dict[str, str], list[int]] | None:
    """The next request: (environment, [helper's stdin, helper's stdout]); None when the parent is gone."""
    head, fds, _flags, _addr = socket.recv_fds(sock, _LENGTH.size, 2)
    while head and len(head) < _LENGTH.size:
        head += sock.recv(_LENGTH.size - len(head))
    if len(head) < _LENGTH.size:
        for fd in fds:
            os.close(fd)
        return None
    size = _LENGTH.unpack(head)[0]
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return pickle.loads(b"".join(chunks)), fds


def serve() -> None:
    """The zygote: import the helper's modules, then fork a helper for each request on fd 0."""
    sock = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    from ecpfs_viewer.model.storage import remote_helper_child

    remote_helper_child.preload()
    signal.signal(signal.SIGCHLD, _reap)
    while True:
        try:
            request = _receive(sock)
        except (OSError, EOFError, pickle.UnpicklingError):
            request = None
        if request is None:
            os._exit(0)
        environment, fds = request
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # not reaped before its pidfd is open
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            for fd in fds:
                os.close(fd)
            _answer(sock, 0, exc.errno or 1, None)
            continue
        if pid == 0:
            _become_helper(sock, environment, fds)
        pidfd = os.pidfd_open(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for fd in fds:
            os.close(fd)
        _answer(sock, pid, 0, pidfd)
        os.close(pidfd)


def _answer(sock: socket.socket, pid: int, error: int, pidfd: int | None) -> None:
    with contextlib.suppress(OSError):
        if pidfd is None:
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                socket.send_fds(sock, [struct.pack(">ii", pid, error)], [null])
            finally:
                os.close(null)
        else:
            socket.send_fds(sock, [struct.pack(">ii", pid, error)], [pidfd])


def _become_helper(sock: socket.socket, environment: dict[str, str], fds: list[int]) -> None:
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        sock.close()
        stdin, stdout = fds
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.close(stdin)
        os.close(stdout)
        os.environ.clear()
        os.environ.update(environment)
        from ecpfs_viewer.model.storage.remote_helper_child import main

        main()
    finally:
        os._exit(1)
