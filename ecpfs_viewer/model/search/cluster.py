"""A dask.distributed cluster to run work on: one way to connect, to wait with a cancel, to retry.

Exact search (:mod:`exact_dask`), compare and tune send their work to a cluster given as
``tcp://HOST:PORT`` (the optional ``scale`` extra). Every task is submitted with ``retries``, so an
error inside a task is tried again; a worker that dies while running a task is the scheduler's to
handle: it runs the task again on another worker (up to its ``allowed-failures``). Waiting polls
the caller's cancel; a cancelled wait stops the futures (after the caller's ``on_stop`` has told
running tasks to clean up and they have, within a grace period) and raises the caller's cancel type.
Every wait has a deadline: a scheduler that no worker joins (or that every worker left) within
WORKER_WAIT_SECONDS is an error value, never a wait without end.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.tasks import Cancelled, checkpoint

SCALE_EXTRA_HINT = "install the scale extra: pip install 'ecpfs-viewer[scale]'"
#: times a task that raised is run again (a worker that dies is the scheduler's allowed-failures)
RETRIES = 3
#: how often a wait looks at the cancel
POLL_SECONDS = 0.1
#: how long a cancelled run waits for its running tasks to clean up before it cancels them
CANCEL_GRACE_SECONDS = 60.0
#: how long a run waits for a first worker to join the scheduler (or for one to come back when all left)
WORKER_WAIT_SECONDS = 30.0
#: the local schedulers ``--scheduler`` also takes: no cluster
LOCAL_SCHEDULERS = ("threads", "sync", "synchronous")


class SchedulerError(UserError):
    """dask is missing, the scheduler cannot be reached or a task failed on it; the message says what to do."""


def is_cluster(scheduler: str | None) -> bool:
    """True when ``scheduler`` names a dask.distributed scheduler (not None nor a local scheduler)."""
    return scheduler is not None and scheduler not in LOCAL_SCHEDULERS


def scheduler_problem(scheduler: str) -> str | None:
    """Why ``scheduler`` is neither a local scheduler nor a scheduler address, or None (the words follow
    the option's or the field's name)."""
    if scheduler in LOCAL_SCHEDULERS or "://" in scheduler:
        return None
    return f"must be 'threads' or a scheduler address like tcp://HOST:PORT (got {scheduler!r})"


def _distributed(address: str) -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise SchedulerError(f"--scheduler {address} needs dask.distributed; {SCALE_EXTRA_HINT}") from exc
    return distributed


@contextlib.contextmanager
def connected(address: str, cancel: threading.Event | None = None,
              cancelled: type[Cancelled] = Cancelled) -> Iterator[Any]:
    """A client of the scheduler at ``address`` (closed on the way out), once a worker has joined it;
    SchedulerError when it is unreachable or no worker joins within WORKER_WAIT_SECONDS."""
    distributed = _distributed(address)
    try:
        client_class: Any = distributed.Client  # untyped: dask's own annotations stop at the Client
        client = client_class(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SchedulerError(f"cannot reach the dask scheduler at {address} ({exc})") from exc
    with client:
        wait_for_workers(client, address, cancel, cancelled)
        yield client


def worker_count(client: Any) -> int:
    """The workers the scheduler knows now (0 when it cannot say)."""
    try:
        try:
            info = client.scheduler_info(n_workers=1)  # the count without every worker's details
        except TypeError:  # a dask.distributed before n_workers
            info = client.scheduler_info()
        return int(info.get("n_workers", len(info.get("workers", {}))))
    except Exception:  # the scheduler went away: no worker to run on
        return 0


def no_workers(address: str, seconds: float, again: bool = False) -> SchedulerError:
    joined = "came back to" if again else "joined"
    return SchedulerError(f"no workers {joined} the scheduler at {address} within {seconds:g} s: start some "
                          f"(dask worker {address}) or check that they can reach it")


def wait_for_workers(client: Any, address: str, cancel: threading.Event | None = None,
                     cancelled: type[Cancelled] = Cancelled, seconds: float | None = None) -> None:
    """Return once a worker has joined; SchedulerError after ``seconds`` (WORKER_WAIT_SECONDS) without one."""
    seconds = WORKER_WAIT_SECONDS if seconds is None else seconds
    deadline = time.monotonic() + seconds
    while worker_count(client) == 0:
        checkpoint(cancel, cancelled)
        if time.monotonic() >= deadline:
            raise no_workers(address, seconds)
        with contextlib.suppress(Exception):  # asks the scheduler now (its info is otherwise refreshed every 2 s)
            client.wait_for_workers(1, timeout=min(1.0, max(0.1, deadline - time.monotonic())))


def gather(client: Any, futures: Sequence[Any], cancel: threading.Event | None = None,
           on_done: Callable[[int, Any], None] | None = None, on_stop: Callable[[], None] | None = None,
           cancelled: type[Cancelled] = Cancelled, keep_results: bool = True) -> list[Any]:
    """The results of ``futures`` in their order, ``on_done(i, result)`` as each arrives (without
    ``keep_results``, only ``on_done`` sees them: the list holds None).

    A cancel (or an error: a task that failed after its retries, a worker that died too often)
    calls ``on_stop``, waits up to CANCEL_GRACE_SECONDS for the running tasks to end, then cancels
    every future, so nothing of the run is left on the cluster.
    """
    address = str(getattr(getattr(client, "scheduler", None), "address", "") or "the scheduler")
    distributed = _distributed(address)
    results: list[Any] = [None] * len(futures)
    alone_since: float | None = None  # when the last worker left, while tasks wait
    next_look = time.monotonic() + 1.0  # the workers are counted once a second (a request to the scheduler)
    waiting = list(range(len(futures)))
    changed = threading.Event()
    for future in futures:
        future.add_done_callback(lambda _f: changed.set())
    try:
        while waiting:
            checkpoint(cancel, cancelled)
            changed.wait(POLL_SECONDS)
            changed.clear()
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + 1.0
                if worker_count(client):
                    alone_since = None
                elif alone_since is None:
                    alone_since = time.monotonic()
                elif time.monotonic() - alone_since > WORKER_WAIT_SECONDS:
                    raise no_workers(address, WORKER_WAIT_SECONDS, again=True)
            for i in [i for i in waiting if futures[i].done()]:
                waiting.remove(i)
                result = _result(futures[i], distributed)
                futures[i].release()  # its value leaves the cluster's memory
                if keep_results:
                    results[i] = result
                if on_done is not None:
                    on_done(i, result)
    except BaseException:
        if on_stop is not None:
            with contextlib.suppress(Exception):  # the scheduler may be what failed
                on_stop()
            deadline = time.monotonic() + CANCEL_GRACE_SECONDS
            running = [f for f in futures if not f.done()]
            while running and time.monotonic() < deadline:
                changed.wait(POLL_SECONDS)
                changed.clear()
                running = [f for f in running if not f.done()]
        with contextlib.suppress(Exception):
            client.cancel(list(futures), force=True)
        raise
    return results


class _Refused:
    """A task's UserError as its value: the same answer on every try, so dask does not retry it."""

    def __init__(self, error: UserError) -> None:
        self.error = error


def _task(function: Callable[..., Any], *args: Any, stop: str | None = None) -> Any:
    try:
        return function(*args, stop=stop)
    except UserError as exc:
        return _Refused(exc)


def _result(future: Any, distributed: Any) -> Any:
    try:
        value = future.result()
        if isinstance(value, _Refused):
            raise value.error
        return value
    except distributed.KilledWorker as exc:
        raise SchedulerError(f"the workers running a task died too often; the run was stopped ({exc})") from exc
    except distributed.CancelledError as exc:
        raise SchedulerError(f"the cluster cancelled a task of this run ({exc})") from exc


def run_tasks(address: str, function: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, name: str,
              cancel: threading.Event | None = None, on_done: Callable[[int, Any], None] | None = None,
              cancelled: type[Cancelled] = Cancelled, keep_results: bool = True) -> list[Any]:
    """``function(*call, stop=NAME)`` for every call as one task each on the cluster at ``address``; the
    results in the order of ``calls``.

    ``function`` runs on a worker, so it must be importable there (a module-level function of this
    package) and take what it needs as values. A stopped run sets the dask Event named ``stop``,
    which :func:`stop_watch` turns into the task's cancel: running tasks clean up and end before
    the run's futures are cancelled (see :func:`gather`).
    """
    distributed = _distributed(address)
    with connected(address, cancel, cancelled) as client:
        run = uuid.uuid4().hex
        event_class: Any = distributed.Event
        stop = event_class(f"{name}-stop-{run}", client=client)
        futures = [client.submit(_task, function, *call, stop=stop.name, key=f"{name}-{run}-{i}", pure=False,
                                 retries=RETRIES) for i, call in enumerate(calls)]
        try:
            return gather(client, futures, cancel, on_done, stop.set, cancelled, keep_results)
        finally:
            with contextlib.suppress(Exception):
                client.cancel(futures)  # releases every future's result on the workers
                stop.clear()


@contextlib.contextmanager
def stop_watch(stop: str | None) -> Iterator[threading.Event]:
    """In a task of :func:`run_tasks`: a cancel that is set once the run's dask Event ``stop`` is set."""
    cancel = threading.Event()
    if stop is None:
        yield cancel
        return
    distributed = _distributed("the worker's scheduler")
    event_class: Any = distributed.Event
    remote = event_class(stop, client=distributed.get_client())
    ended = threading.Event()

    def watch() -> None:
        while not ended.wait(POLL_SECONDS):
            try:
                if remote.is_set():
                    cancel.set()
                    return
            except Exception:  # the scheduler is gone, and with it the run: stop
                cancel.set()
                return

    watcher = threading.Thread(target=watch, name="ecpfs-stop-watch", daemon=True)
    watcher.start()
    try:
        yield cancel
    finally:
        ended.set()
        watcher.join()
