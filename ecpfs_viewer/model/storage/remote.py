"""Remote stores over obstore (s3://, gs://, az://, http(s)://: model/storage/schemes.py) opened read-only.

Every request made through the store returned here is bounded: at most ``max_in_flight`` at
once, fewer while the server struggles (model/storage/adaptive_limit.py: halved on a timeout, a refused or
dropped connection, 429 or 503, grown back slowly), ``timeout_s`` in all, retries with backoff
included. An attempt that has had no answer long after the server answered others (a connection
a small server dropped) is given up and made again. One object that stalls fails alone; a server
that stops answering (two objects unanswered, no answer since) makes later requests fail at once
for ``timeout_s``, or until :meth:`BoundedStore.retry`.
Failures become :class:`RemoteError` values whose message names the object and says what to try
(credentials, ``--anon``, retry), never a credential itself; those on the way are
:class:`~ecpfs_viewer.model.errors.TransportError` too (not facts about the index).
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.buffer import default_buffer_prototype

from ecpfs_viewer.model.errors import TransportError, UserError, describe_exception
from ecpfs_viewer.model.storage import schemes
from ecpfs_viewer.model.storage.adaptive_limit import AdaptiveLimit, ServerHealth
from ecpfs_viewer.model.storage.counted_io import (
    ReadingWrapper,
    UnreadableFile,
    cap_for,
    check_answer,
    check_size,
    too_large,
    unexpected_range,
)
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote_clients import RemoteOpenError as RemoteOpenError
from ecpfs_viewer.model.storage.remote_clients import make_object_store as make_object_store
from ecpfs_viewer.model.storage.stored_bound import check_stored

_T = TypeVar("_T")
#: seconds our deadline waits past the client's timeout, so the client ends first (pyo3 panics otherwise)
DEADLINE_GRACE_S = 1.0
#: attempts of one request at most (the first and its retries), all within timeout_s
MAX_ATTEMPTS = 6
#: an attempt with no answer after this long (doubled per attempt), while the server answered
#: other requests about then, is given up and made again
STALL_S = 2.0


class RemoteError(UserError, OSError):
    """A remote request failed; the message names the object and what to try next."""

    retryable = False


class RemoteAccessError(RemoteError):
    """401 / 403: the credentials in use may not read the object."""


class RemoteTimeoutError(TransportError, RemoteError):
    """No answer within the timeout, or the connection dropped: worth a retry."""

    retryable = True


class RemoteBusyError(TransportError, RemoteError):
    """A status worth a retry (429 and 503 ask for fewer requests); `status` is the code."""

    retryable = True

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[type[RemoteBusyError], tuple[str, int]]:
        return type(self), (str(self), self.status)


class ServerNotAnsweringError(RemoteTimeoutError):
    """Not requested: the server stopped answering (other objects got no answer)."""


class ListingUnavailableError(RemoteError):
    """The server cannot list folders (plain HTTP); the hierarchy must be derived instead."""


def credential_hint(scheme: str) -> str:
    """Which credentials a scheme reads, for an access-denied message (names, never values)."""
    entry = schemes.lookup(scheme)
    return entry.credentials if entry is not None else schemes.Scheme((), "fsspec", "").credentials


def translate_error(exc: BaseException, where: str, scheme: str, timeout_s: float) -> BaseException:
    """An obstore / transport exception as a RemoteError naming `where`; others unchanged."""
    if isinstance(exc, RemoteError | UnreadableFile | FileNotFoundError | asyncio.CancelledError):
        return exc
    timed_out = RemoteTimeoutError(f"{where}: no answer within {timeout_s:g} s; retry, or raise --timeout")
    if isinstance(exc, TimeoutError):
        return timed_out
    try:
        import obstore.exceptions as obs_errors
    except ImportError:  # pragma: no cover - remote.py is only used with obstore installed
        return exc
    first = str(exc).splitlines()[0] if str(exc) else describe_exception(exc)
    text = first.rsplit(" - ", 1)[-1].strip() or first  # obstore: "... after N retries ... - the cause"
    if isinstance(exc, obs_errors.PermissionDeniedError | obs_errors.UnauthenticatedError):
        status = "401 unauthenticated" if isinstance(exc, obs_errors.UnauthenticatedError) else "403 forbidden"
        return RemoteAccessError(f"{where}: access denied ({status}); {credential_hint(scheme)}")
    lowered = first.lower().replace("retry_timeout", "")
    # the first line of a client timeout can read "error sending request" or "body error"; the
    # debug text that follows says what happened
    source = str(exc).replace("retry_timeout", "")
    if any(word in lowered for word in ("timed out", "timeout", "deadline")) or any(
            word in source for word in ("kind: Timeout", "TimedOut")):
        return timed_out
    if any(word in source for word in ("IncompleteBody", "UnexpectedEof")):
        return RemoteTimeoutError(f"{where}: the connection closed before the whole object arrived; retry")
    if any(word in lowered for word in ("connection", "reset", "broken pipe", "error sending request",
                                        "incomplete", "eof", "dns")):
        return RemoteTimeoutError(f"{where}: the connection failed ({text}); retry")
    answered = _STATUS_RE.search(first)
    if answered and int(answered.group(1)) in RETRY_STATUSES:
        return RemoteBusyError(f"{where}: the server answered {answered.group(1)} {answered.group(2).strip()}; retry",
                               int(answered.group(1)))
    if isinstance(exc, obs_errors.BaseError):
        return RemoteError(f"{where}: {text}")
    return exc


_STATUS_RE = re.compile(r"status code: (\d{3})([^:]*)")
#: statuses worth a retry: too many requests, and the server-side failures a moment may cure
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: those that say the server is overloaded: fewer requests in flight
CONGESTION_STATUSES = frozenset({429, 503})


def congested(error: BaseException) -> bool:
    """True when a failure asks for fewer requests in flight (no answer, a dropped connection, 429, 503)."""
    if isinstance(error, RemoteBusyError):
        return error.status in CONGESTION_STATUSES
    return isinstance(error, RemoteTimeoutError)


class _Stalled(Exception):
    """An attempt given up: no answer long after the server answered other requests."""


class BoundedStore(ReadingWrapper[Store]):
    """Wraps a remote zarr Store: adaptive concurrency, retries within a timeout per request, errors
    as RemoteError."""

    def __init__(self, store: Store, *, url: str, options: RemoteOptions, lists: bool = True,
                 health: ServerHealth | None = None) -> None:
        super().__init__(store)
        self.url = url.rstrip("/")
        self.options = options
        self.lists = lists
        self.scheme = urlsplit(url).scheme.lower()
        self.host = urlsplit(url).netloc or self.url
        self.health = health or ServerHealth(options.timeout_s)
        self._limits: dict[int, AdaptiveLimit] = {}
        self._lock = threading.Lock()
        self._first_answer_s = 0.0  # a running mean of how long the server takes to answer

    @classmethod
    async def open(cls, store_cls: type[Store], *args: Any, **kwargs: Any) -> BoundedStore:
        """The store store_cls.open(*args, **kwargs) gives, bounded: the keyword arguments url and
        options (and lists) are this store's, the others store_cls's."""
        url, options, lists = kwargs.pop("url"), kwargs.pop("options"), kwargs.pop("lists", True)
        return cls(await store_cls.open(*args, **kwargs), url=url, options=options, lists=lists)

    def _with_store(self, store: Store) -> BoundedStore:
        return type(self)(store, url=self.url, options=self.options, lists=self.lists, health=self.health)

    def __reduce__(self) -> tuple[Callable[[Store], BoundedStore], tuple[Store]]:
        """A pickled store arrives as a new one over the same store, URL and options: its limits,
        lock and what this one learnt of the server's health stay in the process that sent it."""
        return functools.partial(type(self), url=self.url, options=self.options, lists=self.lists), (self._store,)

    def _limit(self) -> AdaptiveLimit:
        loop_id = id(asyncio.get_running_loop())
        with self._lock:
            limit = self._limits.get(loop_id)
            if limit is None:
                limit = self._limits[loop_id] = AdaptiveLimit(self.options.max_in_flight)
            return limit

    def in_flight_limit(self) -> int:
        """Requests currently allowed in flight (the ceiling until the server struggled)."""
        with self._lock:
            limits = list(self._limits.values())
        return min((limit.allowed for limit in limits), default=self.options.max_in_flight)

    def typical_answer_s(self) -> float:
        """How long the server takes to answer a request, a running mean (0 before any answer)."""
        with self._lock:
            return self._first_answer_s

    def quickest_answer_s(self) -> float:
        """The quickest answer the server gave (0 before any): its own time, with no queue of ours or
        its in the way (a running mean also holds the time our event loop took to take each answer)."""
        with self._lock:
            limits = list(self._limits.values())
        quickest = min((limit.fastest for limit in limits), default=float("inf"))
        return 0.0 if quickest == float("inf") else quickest

    def retry(self) -> None:
        """Ask again: forget that the server stopped answering (F5, Retry, ``--retry``)."""
        self.health.reset()

    def where(self, key: str) -> str:
        return f"{self.url}/{key}" if key else self.url

    def _not_answering(self, key: str) -> ServerNotAnsweringError | None:
        first = self.health.down()
        if first is None:
            return None
        return ServerNotAnsweringError(
            f"{self.where(key)}: not requested: the server at {self.host} is not answering (no answer to {first} "
            f"within {self.options.timeout_s:g} s); retry, or raise --timeout")

    def _stall_after(self, attempt: int) -> float:
        with self._lock:
            typical = self._first_answer_s
        return float(max(STALL_S, 10 * typical) * 2 ** attempt)

    def _note_answer(self, seconds: float) -> None:
        self.health.answered()
        with self._lock:
            self._first_answer_s = seconds if not self._first_answer_s else 0.8 * self._first_answer_s + 0.2 * seconds

    async def _call(self, key: str, make: Callable[[int], Awaitable[_T]]) -> _T:
        """make(attempt) until it answers, it fails for good, or timeout_s has passed since the first
        attempt was made (time waiting for a place in flight does not count)."""
        limit = self._limit()
        deadline: float | None = None
        attempt = 0
        while True:
            refused = self._not_answering(key)
            if refused is not None:
                raise refused
            started = await limit.acquire()
            deadline = started + self.options.timeout_s if deadline is None else deadline
            error: BaseException | None = None
            try:
                left = deadline - started
                result = await asyncio.wait_for(make(attempt), max(left, 0.0) + DEADLINE_GRACE_S)
            except _Stalled as exc:
                error = RemoteTimeoutError(f"{self.where(key)}: no answer within {self.options.timeout_s:g} s; "
                                           "retry, or raise --timeout")
                error.__cause__ = exc
            except Exception as exc:
                error = self.translate(exc, key)
                if error is not exc:
                    error.__cause__ = exc
            except BaseException:
                await limit.release(started, congested=False)
                raise
            else:
                await limit.release(started, congested=False)
                self._note_answer(time.monotonic() - started)
                return result
            failed_on_the_way = isinstance(error, TransportError)
            await limit.release(started, congested=congested(error))
            if not failed_on_the_way:  # the server answered (404, 403, a cap): no retry
                self.health.answered()
                raise error
            if isinstance(error, RemoteBusyError):
                self.health.answered()  # a 429 or 503 is an answer: busy, not gone (never "not answering")
            else:
                self.health.failed(self.where(key), started)
            attempt += 1
            pause = min(0.1 * 2 ** attempt, 2.0) * random.uniform(0.5, 1.0)
            if attempt >= MAX_ATTEMPTS or time.monotonic() + pause >= deadline:
                raise error
            await asyncio.sleep(pause)

    @property
    def object_store(self) -> Any:
        """The obstore client under zarr's ObjectStore (None under another store: fsspec's)."""
        return getattr(self._store, "store", None)

    def translate(self, exc: BaseException, key: str) -> BaseException:
        """A client's exception as a RemoteError naming the object (others unchanged)."""
        return translate_error(exc, self.where(key), self.scheme, self.options.timeout_s)

    async def _answer(self, attempt: int, pending: Awaitable[_T]) -> _T:
        """The answer of one attempt, given up (_Stalled) when it is long overdue while the server
        answered other requests about then (a connection the server dropped).

        Awaited directly and watched by one timer: no asyncio.wait (a waiter future, callbacks and
        one more turn of the event loop) for each of a check's 80,000 requests."""
        answer = asyncio.ensure_future(pending)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        stalled: list[float] = []
        watches: list[asyncio.TimerHandle] = []

        def look(patience: float) -> None:
            if answer.done():
                return
            if self.health.last_answer() > started - patience:  # others were answered meanwhile
                stalled.append(time.monotonic() - started)
                answer.cancel()
            else:
                watches.append(loop.call_later(0.25, look, 0.25))

        patience = self._stall_after(attempt)
        watches.append(loop.call_later(patience, look, patience))
        try:
            return await answer
        except asyncio.CancelledError:
            if stalled and not _cancelling():
                raise _Stalled(f"no answer after {stalled[0]:.1f} s") from None
            raise
        finally:
            watches[-1].cancel()
            if not answer.done():
                answer.cancel()

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        """The object (or a range of it), each within the cap for its kind (metadata or chunk):
        a longer range is refused before it is asked for, a larger object once its size is known
        from the answer's headers, before its body is read (UnreadableFile, as for a local file);
        so is a whole chunk past its bound (model/storage/stored_bound.py)."""
        _refuse_long_range(self.where(key), key, byte_range)
        try:
            found = await self._call(key, lambda attempt: self._get_capped(key, prototype, byte_range, attempt))
        except RemoteError as exc:
            if byte_range is None or type(exc.__cause__).__name__ != "NotSupportedError":
                raise
            # A server that ignores Range headers (python's http.server, some static hosts): cut the
            # requested bytes from the whole object.
            whole = await self._call(key, lambda attempt: self._get_capped(key, prototype, None, attempt))
            found = None if whole is None else _cut(whole, byte_range)
        if found is not None:
            check_answer(self.where(key), byte_range, len(found))  # past the end: refused, never answered short
        return found

    async def _get_capped(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None,
                          attempt: int) -> Buffer | None:
        inner = getattr(self._store, "store", None)  # the obstore client under zarr's ObjectStore
        if inner is None or isinstance(byte_range, RangeByteRequest | SuffixByteRequest):
            try:
                found = await self._store.get(key, prototype, byte_range)  # a bounded length, checked before
            except OverflowError as exc:  # zarr's ObjectStore asks from a negative start for a suffix past the start
                if not isinstance(byte_range, SuffixByteRequest):
                    raise
                raise UnreadableFile(self.where(key), f"the last {byte_range.suffix:,} bytes asked for, more than the "
                                                      "object holds; could not be read") from exc
            if found is not None:
                check_size(self.where(key), key, len(found), "the object")
                if byte_range is None:
                    check_stored(self.where(key), key, len(found))
            return found
        import obstore

        options: dict[str, Any] = {} if byte_range is None else {"range": {"offset": _offset(byte_range)}}
        try:
            answer = await self._answer(attempt, obstore.get_async(inner, key, options=options))  # type: ignore[arg-type]
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None  # what zarr's ObjectStore answers for a missing key
        start, stop = answer.range
        what = "the object" if byte_range is None else f"the object from byte {start:,}"
        check_size(self.where(key), key, stop - start, what)  # before the body: dropping the answer closes it
        if byte_range is None:
            check_stored(self.where(key), key, stop - start)  # a chunk's bound (model/storage/stored_bound.py)
        data = await answer.bytes_async()
        check_size(self.where(key), key, len(data), what)
        return prototype.buffer.from_bytes(data)  # type: ignore[arg-type]

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        ranges = list(key_ranges)
        found = await asyncio.gather(*(self.get(key, prototype, byte_range) for key, byte_range in ranges))
        return list(found)

    async def exists(self, key: str) -> bool:
        return await self._call(key, lambda attempt: self._store.exists(key))

    async def read_with_validators(self, key: str) -> tuple[bytes | None, str | None]:
        """The whole object (capped) and what says whether it changed: its ETag, Last-Modified and
        size, None when the server sends neither (then nothing read from it may be cached);
        (None, 'absent') for a missing object."""
        inner = getattr(self._store, "store", None)
        if inner is None:
            found = await self.get(key, default_buffer_prototype())
            return (None if found is None else found.to_bytes()), None
        import obstore

        async def fetch(attempt: int) -> tuple[bytes | None, str | None]:
            try:
                answer = await self._answer(attempt, obstore.get_async(inner, key))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None, "absent"
            start, stop = answer.range
            check_size(self.where(key), key, stop - start, "the object")
            data = bytes(await answer.bytes_async())
            check_size(self.where(key), key, len(data), "the object")
            return data, _validators(answer.meta)

        return await self._call(key, fetch)

    async def getsize(self, key: str) -> int:
        return await self._call(key, lambda attempt: self._store.getsize(key))

    async def _listed(self, prefix: str, lister: Callable[[str], AsyncIterator[str]]) -> list[str]:
        if not self.lists:
            raise ListingUnavailableError(f"{self.where(prefix)}: the server does not list folders")

        async def collect() -> list[str]:
            return [name async for name in lister(prefix)]

        return await self._call(prefix, lambda attempt: collect())

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._listed(prefix, self._store.list_dir):
            yield name

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._listed(prefix, self._store.list_prefix):
            yield name


def _cancelling() -> bool:
    """True when the running task itself was asked to stop (not just the attempt it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _validators(meta: Any) -> str | None:
    tag, modified = meta.get("e_tag"), meta.get("last_modified")
    # obstore's stand-in for a missing Last-Modified header is the epoch
    dated = modified.isoformat() if modified is not None and modified.timestamp() != 0 else ""
    return f"{tag or ''}|{dated}|{meta.get('size')}" if tag or dated else None


def _offset(byte_range: ByteRequest) -> int:
    if not isinstance(byte_range, OffsetByteRequest):
        raise unexpected_range(byte_range)
    return byte_range.offset


def _refuse_long_range(where: str, key: str, byte_range: ByteRequest | None) -> None:
    """Refuse a requested range longer than the cap for key, before any request."""
    if isinstance(byte_range, RangeByteRequest):
        length = byte_range.end - byte_range.start
    elif isinstance(byte_range, SuffixByteRequest):
        length = byte_range.suffix
    else:
        return
    cap, name = cap_for(key)
    if length > cap:
        too_large(where, name, length, "the requested range")


def _cut(whole: Buffer, byte_range: ByteRequest) -> Buffer:
    size = len(whole)
    if isinstance(byte_range, RangeByteRequest):
        return whole[byte_range.start:min(byte_range.end, size)]
    if isinstance(byte_range, OffsetByteRequest):
        return whole[byte_range.offset:]
    if isinstance(byte_range, SuffixByteRequest):
        return whole[max(size - byte_range.suffix, 0):]
    raise unexpected_range(byte_range)


def open_remote(url: str, options: RemoteOptions) -> BoundedStore:
    """A read-only zarr store for a URL through obstore, bounded and translated (no request yet);
    model/storage/remote_helper.py's open_remote_store may make its requests in a helper process."""
    try:
        from zarr.storage import ObjectStore
    except ImportError as exc:  # pragma: no cover - zarr >= 3.1 has it
        raise RemoteOpenError(f"{url}: this zarr has no ObjectStore") from exc
    try:
        inner = make_object_store(url, options)
    except RemoteOpenError:
        raise
    except Exception as exc:  # obstore raises its own config errors; none carries a secret
        raise RemoteOpenError(f"{url}: could not set up the client ({describe_exception(exc)})") from exc
    entry = schemes.lookup(urlsplit(url).scheme)
    store = ObjectStore(inner, read_only=True)
    return BoundedStore(store, url=url, options=options, lists=entry is None or entry.lists)


def obstore_available() -> bool:
    try:
        import obstore  # noqa: F401
    except ImportError:
        return False
    return True
