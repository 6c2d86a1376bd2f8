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
import subprocess
import sys
import threading
from typing import IO, Any

from ecpfs_viewer.model.storage import remote_helper_child
from ecpfs_viewer.model.storage.remote_helper_child import read_frame, write_frame

#: one byte that carries the descriptors of a request or an answer; its frame follows (remote_helper_child's)
_MARK = b"\0"
#: the command a helper runs when it is not forked (remote_helper.py)
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
        self.reader, self.writer = ours.makefile("rb"), ours.makefile("wb")
        self.lock = threading.Lock()

    def fork(self) -> ForkedHelper:
        """A new helper with this process's environment; OSError when the zygote cannot make one."""
        to_child_read, to_child_write = os.pipe()
        from_child_read, from_child_write = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.socket, [_MARK], [to_child_read, from_child_write])
                write_frame(self.writer, dict(os.environ))
                pid, pidfd = _read_answer(self.socket, self.reader)
        except BaseException:
            for fd in (to_child_write, from_child_read):
                os.close(fd)
            raise
        finally:
            os.close(to_child_read)
            os.close(from_child_write)
        return ForkedHelper(pid, pidfd, os.fdopen(to_child_write, "wb"), os.fdopen(from_child_read, "rb"))

    def close(self) -> None:
        for end in (self.reader, self.writer, self.socket):  # the socket closes with the last of them
            with contextlib.suppress(OSError):
                end.close()  # the zygote ends when its socket closes; its helpers when their pipes do
        with contextlib.suppress(OSError):
            self.process.wait(timeout=5)


def _read_answer(sock: socket.socket, reader: IO[bytes]) -> tuple[int, int]:
    """(pid, pidfd) of the helper forked; OSError when the zygote ended or could not fork."""
    mark, fds, _flags, _addr = socket.recv_fds(sock, 1, 1)
    try:
        if not mark:
            raise OSError("the helper zygote ended")
        try:
            pid, error = read_frame(reader)
        except (EOFError, pickle.UnpicklingError) as exc:
            raise OSError("the helper zygote ended") from exc
        if error:
            raise OSError(error, f"the helper zygote could not fork: {os.strerror(error)}")
        if len(fds) != 1:
            raise OSError("the helper zygote sent no handle to its helper")
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
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


def _receive(sock: socket.socket, reader: IO[bytes]) -> tuple[dict[str, str], list[int]] | None:
    """The next request: (environment, [helper's stdin, helper's stdout]); None when the parent is gone."""
    mark, fds, _flags, _addr = socket.recv_fds(sock, 1, 2)
    try:
        if mark and len(fds) == 2:
            return read_frame(reader), fds
    except (EOFError, pickle.UnpicklingError):
        pass
    for fd in fds:
        os.close(fd)
    return None


def serve() -> None:
    """The zygote: import the helper's modules, then fork a helper for each request on fd 0."""
    sock = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # frames are read and written through these; each arrives only after this side's answer, so
    # the reader never reads ahead into the mark of the next request (whose descriptors ride on it)
    ends = (sock.makefile("rb"), sock.makefile("wb"), sock)
    remote_helper_child.preload()
    signal.signal(signal.SIGCHLD, _reap)
    while True:
        try:
            request = _receive(sock, ends[0])
        except OSError:
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
            _answer(sock, ends[1], 0, exc.errno or 1, None)
            continue
        if pid == 0:
            _become_helper(ends, environment, fds)
        pidfd = os.pidfd_open(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for fd in fds:
            os.close(fd)
        _answer(sock, ends[1], pid, 0, pidfd)
        os.close(pidfd)


def _answer(sock: socket.socket, writer: IO[bytes], pid: int, error: int, pidfd: int | None) -> None:
    """The mark (the pidfd on it, when a helper was forked), then (pid, error) as a frame."""
    with contextlib.suppress(OSError):
        socket.send_fds(sock, [_MARK], [] if pidfd is None else [pidfd])
        write_frame(writer, (pid, error))


def _become_helper(ends: tuple[IO[bytes], IO[bytes], socket.socket], environment: dict[str, str],
                   fds: list[int]) -> None:
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for end in ends:  # the zygote's socket, closed with the last of its files
            end.close()
        stdin, stdout = fds
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.close(stdin)
        os.close(stdout)
        os.environ.clear()
        os.environ.update(environment)
        remote_helper_child.main()
    finally:
        os._exit(1)
