"""fsspec URLs and chains (sftp://, ftp://, webdav://, hf://, reference://, simplecache::…) opened
read-only through zarr's FsspecStore, behind the same guards as the obstore stores.

The store is a :class:`~ecpfs_viewer.model.storage.remote.BoundedStore` (a deadline per request,
retries on the way, requests counted by the opened store's IOCounter) that reads a whole object as
a range of at most its cap plus one byte, so a large object is refused after at most that many bytes
whatever the client. The file system is made by fsspec's own ``url_to_fs`` (its usual instance,
the one its constructor may connect with) and handed to zarr through fsspec's
AsyncFileSystemWrapper: a client that connects in its constructor (sshfs) cannot be made inside a
running event loop, which is what zarr's ``from_url`` asks of an async one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ftplib
import json
from collections.abc import AsyncIterator
from typing import Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest

from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage import event_loop, schemes
from ecpfs_viewer.model.storage.counted_io import UnreadableFile, cap_for
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import (
    BoundedStore,
    RemoteAccessError,
    RemoteError,
    RemoteOpenError,
    RemoteTimeoutError,
)

#: names of client exceptions that say the connection failed on the way (worth a retry)
_TRANSPORT_NAMES = frozenset({"DisconnectError", "ConnectionLost", "ChannelOpenError", "TransportError",
                              "ConnectError", "ReadError", "RemoteProtocolError", "ReadTimeout", "ConnectTimeout",
                              "PoolTimeout"})


def fsspec_available() -> bool:
    try:
        import fsspec  # noqa: F401
    except ImportError:
        return False
    return True


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def storage_options(url: str, pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The keyword arguments fsspec takes for url from (KEY, VALUE) pairs: VALUE as JSON when it
    parses, else text; ``PROTOCOL.KEY`` names a layer of the chain (``simplecache.cache_storage``)."""
    layers = set(schemes.chain_schemes(url))
    found: dict[str, Any] = {}
    for key, text in pairs:
        head, dot, rest = key.strip().partition(".")
        if dot and rest and head.lower() in layers:
            layer = found.setdefault(head.lower(), {})
            if not isinstance(layer, dict):
                raise RemoteOpenError(f"{url}: storage option {head} is given both as a value and as {key}")
            layer[rest] = _value(text)
        else:
            found[key.strip()] = _value(text)
    if isinstance(found.get("auth"), list):  # webdav4 (httpx) takes a (user, password) tuple, JSON gives a list
        found["auth"] = tuple(found["auth"])
    return found


def translate_fsspec_error(exc: BaseException, where: str, entry: schemes.Scheme | None,
                           timeout_s: float) -> BaseException:
    """A client's exception as a RemoteError naming `where`: on the way (retried), access denied,
    or "could not be read" with what the client said; a missing object and our refusals unchanged."""
    if isinstance(exc, RemoteError | UnreadableFile | FileNotFoundError | asyncio.CancelledError):
        return exc
    if isinstance(exc, TimeoutError):
        return RemoteTimeoutError(f"{where}: no answer within {timeout_s:g} s; retry, or raise --timeout")
    said = describe_exception(exc)
    hint = entry.credentials if entry is not None else schemes.Scheme((), "fsspec", "").credentials
    if isinstance(exc, PermissionError) or (isinstance(exc, ftplib.error_perm) and str(exc).startswith("530")):
        return RemoteAccessError(f"{where}: access denied ({said}); {hint}")
    if isinstance(exc, ConnectionError | EOFError | ftplib.error_temp) or type(exc).__name__ in _TRANSPORT_NAMES:
        return RemoteTimeoutError(f"{where}: the connection failed ({said}); retry")
    return RemoteError(f"{where}: could not be read ({said})")


class FsspecBoundedStore(BoundedStore):
    """A BoundedStore over zarr's FsspecStore: whole objects and offsets read as capped ranges."""

    def translate(self, exc: BaseException, key: str) -> BaseException:
        return translate_fsspec_error(exc, self.where(key), schemes.target(self.url), self.options.timeout_s)

    async def _get_capped(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None,
                          attempt: int) -> Buffer | None:
        if isinstance(byte_range, RangeByteRequest | SuffixByteRequest):  # length checked before, answer after
            return await self._store.get(key, prototype, byte_range)
        if byte_range is not None and not isinstance(byte_range, OffsetByteRequest):
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}.")
        offset = 0 if byte_range is None else byte_range.offset
        cap, name = cap_for(key)
        # one byte before the offset: an empty answer then says the offset is past the end (fsspec
        # answers an empty range there, which would be taken for what is stored)
        start = max(offset - 1, 0)
        found = await self._store.get(key, prototype, RangeByteRequest(start, offset + cap + 1))
        if found is None:
            return None
        if offset > 0:
            if len(found) == 0:
                raise UnreadableFile(self.where(key), f"bytes from {offset:,} asked for, past the end of the object; "
                                                      "could not be read")
            found = found[1:]
        if len(found) > cap:
            kind = "metadata document" if name == "max_metadata_bytes" else "chunk"
            what = "the object" if offset == 0 else f"the object from byte {offset:,}"
            raise UnreadableFile(self.where(key), f"{what} is over {current_limits().describe(name)} for one {kind}; "
                                                  "not read")
        return found


def _make_store(url: str, kwargs: dict[str, Any]) -> tuple[Store, bool]:
    """The store, and whether its client is async (shared safely by requests in flight)."""
    from fsspec.core import url_to_fs
    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper
    from zarr.storage import FsspecStore

    class ListedFsspecStore(FsspecStore):
        """FsspecStore, listing a folder by the names of its children whatever the root (zarr 3.1
        joined an empty root path with '/': a reference file system found no child of '/a')."""

        async def list_dir(self, prefix: str) -> AsyncIterator[str]:
            folder = "/".join(part for part in (self.path.strip("/"), prefix.strip("/")) if part)
            try:
                found = await self.fs._ls(folder, detail=False)
            except FileNotFoundError:
                return
            seen: set[str] = set()
            for entry in found:
                name = str(entry).rstrip("/").rsplit("/", 1)[-1]
                if name not in ("", ".", "..") and name not in seen and str(entry).rstrip("/") != folder:
                    seen.add(name)
                    yield name

    fs, path = url_to_fs(url, **kwargs)
    store = ListedFsspecStore(fs=AsyncFileSystemWrapper(fs, asynchronous=True), path=path.rstrip("/"), read_only=True)
    return store, bool(fs.async_impl)


def open_fsspec(url: str, options: RemoteOptions) -> tuple[FsspecBoundedStore, RemoteOptions]:
    """The bounded read-only store for an fsspec URL or chain, and the options it is read with (one
    request at a time for a client that cannot share its connection). The client is made, and may
    connect, within the timeout."""
    if not fsspec_available():
        raise RemoteOpenError(f"{url}: opening {schemes.scheme_of(url)}:// URLs needs fsspec; "
                              f"{schemes.FSSPEC_EXTRA_HINT}")
    kwargs = storage_options(url, options.storage_options)
    entry = schemes.target(url)
    if entry is not None and entry.family == "ftp" and "timeout" not in kwargs:
        kwargs["timeout"] = options.timeout_s  # ftplib's own, for each blocking call

    async def make() -> tuple[Store, bool]:
        return await asyncio.wait_for(asyncio.to_thread(_make_store, url, kwargs), options.timeout_s)

    try:
        store, async_client = event_loop.run(make())
    except ImportError as exc:  # fsspec names the package a protocol needs
        raise RemoteOpenError(f"{url}: {exc}; {schemes.FSSPEC_EXTRA_HINT}") from exc
    except ValueError as exc:  # "Protocol not known: …"
        raise RemoteOpenError(f"{url}: {exc}") from exc
    except Exception as exc:
        error = translate_fsspec_error(exc, url, entry, options.timeout_s)
        raise RemoteOpenError(str(error)) from exc
    layers = [schemes.lookup(name) for name in schemes.chain_schemes(url)]
    # a client this table does not name is shared only when it is async
    serial = not all(async_client if layer is None else layer.concurrent for layer in layers)
    if serial and options.max_in_flight > 1:
        options = dataclasses.replace(options, max_in_flight=1)
    lists = entry.lists if entry is not None else True
    return FsspecBoundedStore(store, url=url, options=options, lists=lists), options
