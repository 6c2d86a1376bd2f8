"""zarr-python's own store contract (``zarr.testing.store.StoreTests``), run on each store of ours
that zarr reads through: CountingStore, GuardedLocalStore, GuardedZipStore and BoundedStore (on
moto's S3 server on loopback), so a zarr release that asks more of a store shows up here first.

The suite has no asyncio plugin: :class:`_Contract` runs StoreTests' coroutine tests and fixtures
on the model's event loop (model/storage/event_loop.py), where the model runs its own reads. The
fixture data of each test is written past the store under test, into the store it wraps; a test
a wrapper cannot pass as written is overridden in its class, with the reason and its read-only part.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import re
import uuid
import zipfile
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import cloud_emulators
import numpy as np
import pytest
import remote_fixtures
import zarr
import zarr.api.asynchronous
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.buffer.cpu import Buffer
from zarr.storage import LocalStore, MemoryStore, ObjectStore
from zarr.testing.store import StoreTests

from ecpfs_viewer.model.limits import Limits, set_limits
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.counted_io import CountingStore, IOCounter, UnreadableFile
from ecpfs_viewer.model.storage.guarded import GuardedLocalStore
from ecpfs_viewer.model.storage.remote import BoundedStore, ListingUnavailableError, RemoteOptions, make_object_store
from ecpfs_viewer.model.storage.zip_store import GuardedZipStore


def _on_the_model_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """A coroutine test of StoreTests as a plain one (same name, arguments and marks)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        event_loop.run(test(*args, **kwargs))

    return run


def _sync_io(store: Any) -> Any:
    """store, when it can do synchronous I/O: a wrapper has the methods of it whatever it wraps, and
    says in _supports_sync_io (zarr >= 3.2) whether they work, as zarr's own sync reads ask."""
    if not getattr(store, "_supports_sync_io", True):
        pytest.skip(f"{type(store).__name__} wraps a store with no synchronous I/O")
    return store


class _Contract(StoreTests[Any, Buffer]):
    """StoreTests with its coroutines run on the model's loop, and one test of ours: reads that
    zarr makes through a newer API still go through the store under test."""

    buffer_cls = Buffer

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            test = getattr(cls, name)
            if name.startswith("test_") and inspect.iscoroutinefunction(test):
                setattr(cls, name, _on_the_model_loop(test))

    @staticmethod
    def _require_get_sync(store: Any) -> Any:
        return _sync_io(StoreTests._require_get_sync(store))

    @staticmethod
    def _require_set_sync(store: Any) -> Any:
        return _sync_io(StoreTests._require_set_sync(store))

    @staticmethod
    def _require_delete_sync(store: Any) -> Any:
        return _sync_io(StoreTests._require_delete_sync(store))

    @pytest.fixture
    def store(self, open_kwargs: dict[str, Any]) -> Store:
        return event_loop.run(self.store_cls.open(**open_kwargs))

    @pytest.fixture
    def store_not_open(self, store_kwargs: dict[str, Any]) -> Store:
        return self.store_cls(**store_kwargs)

    def test_store_supports_writes(self, store: Store) -> None:
        assert store.supports_writes

    async def test_a_partial_shard_is_read_through_this_store(self, store: Store) -> None:
        """zarr >= 3.2 reads the chunks of a partial shard with get_ranges, which zarr's WrapperStore
        hands to the wrapped store: here each of those reads still meets the cap."""
        await self._write_sharded(store)
        array = await zarr.api.asynchronous.open_array(store=store, path="a", mode="r" if store.read_only else "r+")
        set_limits(Limits(max_chunk_bytes=100))  # the shard's index (68 bytes) passes, a chunk (128) not
        try:
            with pytest.raises((UnreadableFile, BaseExceptionGroup)) as caught:
                await array.getitem(slice(1, 40))
        finally:
            set_limits(None)
        errors = caught.value.exceptions if isinstance(caught.value, BaseExceptionGroup) else (caught.value,)
        assert any(isinstance(error, UnreadableFile) and "a/c/0" in str(error) for error in errors), errors

    async def _write_sharded(self, store: Store) -> None:
        """An array of one shard of four uncompressed chunks of 128 bytes, written with self.set."""
        source = MemoryStore()
        array = zarr.create_array(source, name="a", shape=(128,), chunks=(32,), shards=(128,), dtype="i4",
                                  compressors=None)
        array[:] = np.arange(128, dtype="i4")
        async for key in source.list():
            found = await source.get(key, default_buffer_prototype())
            assert found is not None
            await self.set(store, key, found)

    def test_store_supports_listing(self, store: Store) -> None:
        assert store.supports_listing


class TestCountingStore(_Contract):
    """CountingStore over a LocalStore: what zarr asks of a store, and every read counted."""

    store_cls = CountingStore

    async def set(self, store: CountingStore, key: str, value: Buffer) -> None:
        await store.wrapped.set(key, value)

    async def get(self, store: CountingStore, key: str) -> Buffer:
        return await store.wrapped.get(key, prototype=default_buffer_prototype())

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"store": LocalStore(str(tmp_path))}

    @pytest.fixture
    def open_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"store_cls": LocalStore, "root": str(tmp_path)}

    def test_store_repr(self, store: CountingStore) -> None:
        assert repr(store) == f"WrapperStore(LocalStore, '{store.wrapped}')"

    async def test_a_partial_shard_is_read_through_this_store(self, store: CountingStore) -> None:
        """As for the others, but a CountingStore has no cap: every byte of the read is counted."""
        await self._write_sharded(store)
        array = await zarr.api.asynchronous.open_array(store=store, path="a", mode="r" if store.read_only else "r+")
        before = store.counter.snapshot()
        assert (await array.getitem(slice(1, 40))).tolist() == list(range(1, 40))
        assert (store.counter.snapshot() - before).bytes_read == 68 + 2 * 128  # the index, two chunks

    def test_a_pickled_store_reads_the_same_bytes_and_counts_afresh(self, store: CountingStore) -> None:
        event_loop.run(self.set(store, "c/0", Buffer.from_bytes(b"\x01\x02\x03")))
        assert store.get_sync("c/0") is not None
        copy = pickle.loads(pickle.dumps(store))
        found = copy.get_sync("c/0")
        assert found is not None and found.to_bytes() == b"\x01\x02\x03"
        assert copy.counter.snapshot().requests == 1  # its own count, from unpickling on
        assert store.counter.snapshot().requests == 1
        assert isinstance(copy.counter, IOCounter)


_NO_WRITES = "a static web server takes no writes (the viewer opens every remote store read-only)"


def _refused(reason: str) -> Callable[..., None]:
    """A StoreTests test this store cannot take, replaced by a skip that says why."""

    def test(self: Any) -> None:
        pytest.skip(reason)

    return test


class _FilesOnDisk:
    """StoreTests' set and get, on the files of a folder the store under test reads."""

    def folder(self, store: Any) -> Path:
        raise NotImplementedError

    async def set(self, store: Any, key: str, value: Buffer) -> None:
        path = self.folder(store) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value.to_bytes())

    async def get(self, store: Any, key: str) -> Buffer:
        return Buffer.from_bytes((self.folder(store) / key).read_bytes())


class TestGuardedLocalStore(_FilesOnDisk, _Contract):
    """GuardedLocalStore: a LocalStore whose reads are its own (regular files only, capped)."""

    store_cls = GuardedLocalStore

    def folder(self, store: GuardedLocalStore) -> Path:
        return Path(store.root)

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"root": str(tmp_path)}

    def test_store_repr(self, store: GuardedLocalStore) -> None:
        assert repr(store) == f"LocalStore('file://{store.root.as_posix()}')"

    @pytest.mark.parametrize("byte_range", [None, RangeByteRequest(1, 4), OffsetByteRequest(1), SuffixByteRequest(1),
                                            RangeByteRequest(10, 20)],
                             ids=["none", "range", "offset", "suffix", "range-past-eof"])
    async def test_get_sync_byte_range_parity(self, store: GuardedLocalStore, byte_range: Any) -> None:
        """zarr's parity test, but a range past the end is refused by both reads, naming the file,
        where zarr's LocalStore answers it short (issue 34: a short answer passes for what is stored)."""
        await self.set(store, "parity_byte_range", Buffer.from_bytes(b"\x01\x02\x03\x04"))
        if isinstance(byte_range, RangeByteRequest) and byte_range.end > 4:
            past_the_end = "parity_byte_range: bytes 10–20 asked for, past the end"
            with pytest.raises(UnreadableFile, match=past_the_end):
                store.get_sync("parity_byte_range", byte_range=byte_range)
            with pytest.raises(UnreadableFile, match=past_the_end):
                await store.get("parity_byte_range", default_buffer_prototype(), byte_range)
            return
        sync_result = store.get_sync("parity_byte_range", byte_range=byte_range)
        async_result = await store.get("parity_byte_range", default_buffer_prototype(), byte_range)
        assert sync_result is not None and async_result is not None
        assert sync_result.to_bytes() == async_result.to_bytes()


class TestGuardedZipStore(_Contract):
    """GuardedZipStore, read-only over a zip on disk: StoreTests' set appends the member with
    zipfile (outside the store under test) and gives the store the directory as it now reads, as
    a zip opened again would. Its write tests are replaced: by their read-only part where they
    have one, else by a skip that says why."""

    store_cls = GuardedZipStore

    async def set(self, store: GuardedZipStore, key: str, value: Buffer) -> None:
        with zipfile.ZipFile(store.path, "a") as archive:
            archive.writestr(key, value.to_bytes())
        fresh = GuardedZipStore(store.path)
        store.directory, store.file_size, store.identity = fresh.directory, fresh.file_size, fresh.identity

    async def get(self, store: GuardedZipStore, key: str) -> Buffer:
        with zipfile.ZipFile(store.path) as archive:
            return Buffer.from_bytes(archive.read(key))

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        path = tmp_path / "store.zip"
        zipfile.ZipFile(path, "w").close()
        return {"path": path}

    @pytest.fixture
    def store(self, open_kwargs: dict[str, Any]) -> Store:
        """The store, whose set (which StoreTests' listing tests write through) writes into the zip
        as self.set does; the store's own refusal is test_read_only_store_raises'."""
        store = event_loop.run(self.store_cls.open(**open_kwargs))
        store.set = functools.partial(self.set, store)  # type: ignore[method-assign]
        return store

    def test_store_supports_writes(self, store: GuardedZipStore) -> None:
        assert not store.supports_writes and store.read_only

    def test_store_repr(self, store: GuardedZipStore) -> None:
        assert repr(store) == f"GuardedZipStore('zip://{store.path}')"

    def test_store_read_only(self, store: GuardedZipStore) -> None:
        assert store.read_only
        with pytest.raises(AttributeError):
            store.read_only = False  # type: ignore[misc]

    def test_store_open_read_only(self, open_kwargs: dict[str, Any]) -> None:
        """Asked to open writable or not, a zip is opened read-only."""
        for read_only in (True, False):
            assert event_loop.run(self.store_cls.open(**open_kwargs, read_only=read_only)).read_only

    async def test_read_only_store_raises(self, open_kwargs: dict[str, Any]) -> None:
        store = await self.store_cls.open(**open_kwargs)
        for write in (store.set("foo", Buffer.from_bytes(b"bar")), store.delete("foo"),
                      store.set_if_not_exists("foo", Buffer.from_bytes(b"bar")), store.clear()):
            with pytest.raises(ValueError, match="read-only"):
                await write

    async def test_with_read_only_store(self, store: GuardedZipStore) -> None:
        assert store.with_read_only(read_only=True) == store
        with pytest.raises(ValueError, match="read-only"):
            store.with_read_only(read_only=False)

    async def test_serializable_store(self, store: GuardedZipStore) -> None:
        await self.set(store, "foo", Buffer.from_bytes(b"\x01\x02\x03\x04"))
        copy = pickle.loads(pickle.dumps(store))
        assert copy == store and copy.read_only
        found = await copy.get("foo", prototype=default_buffer_prototype())
        assert found is not None and found.to_bytes() == b"\x01\x02\x03\x04"

    async def test_getsize_prefix(self, store: GuardedZipStore) -> None:
        """zarr's test without its clear() at the end."""
        for key in ("c/0/0", "c/0/1", "c/1/0", "c/1/1", "cc/0"):
            await self.set(store, key, Buffer.from_bytes(b"\x01\x02\x03\x04"))
        assert await store.getsize_prefix("c") == 16

    async def test_exists(self, store: GuardedZipStore) -> None:
        assert not await store.exists("foo/zarr.json")
        await self.set(store, "foo/zarr.json", Buffer.from_bytes(b"bar"))
        assert await store.exists("foo/zarr.json")

    _NO_WRITES = "a zip is opened read-only: test_read_only_store_raises"
    test_clear = _refused(_NO_WRITES)
    test_delete = _refused(_NO_WRITES)
    test_delete_dir = _refused(_NO_WRITES)
    test_delete_nonexistent_key_does_not_raise = _refused(_NO_WRITES)
    test_set = _refused(_NO_WRITES)
    test_set_many = _refused(_NO_WRITES)
    test_set_not_open = _refused(_NO_WRITES)
    test_set_if_not_exists = _refused(_NO_WRITES)


@pytest.fixture(scope="module")
def s3(moto_endpoint: str) -> Any:
    """A boto3 client of moto's server, to make the buckets."""
    return cloud_emulators.s3_client(moto_endpoint)


class TestBoundedStore(_Contract):
    """BoundedStore over zarr's ObjectStore on moto's S3 server on loopback, one bucket per test."""

    store_cls = BoundedStore

    async def set(self, store: BoundedStore, key: str, value: Buffer) -> None:
        import obstore

        await obstore.put_async(store._store.store, key, value.to_bytes())

    async def get(self, store: BoundedStore, key: str) -> Buffer:
        import obstore

        answer = await obstore.get_async(store._store.store, key)
        return Buffer.from_bytes(bytes(await answer.bytes_async()))

    @pytest.fixture
    def bucket_url(self, s3: Any) -> str:
        bucket = f"contract-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(Bucket=bucket)
        return f"s3://{bucket}"

    @pytest.fixture
    def open_kwargs(self, bucket_url: str, moto_endpoint: str) -> dict[str, Any]:
        options = RemoteOptions(endpoint=moto_endpoint, timeout_s=10.0)
        return {"store_cls": ObjectStore, "store": make_object_store(bucket_url, options),
                "url": bucket_url, "options": options}

    @pytest.fixture
    def store_kwargs(self, open_kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"store": ObjectStore(open_kwargs["store"]), "url": open_kwargs["url"],
                "options": open_kwargs["options"]}

    def test_store_repr(self, store: BoundedStore) -> None:
        assert repr(store) == f"WrapperStore(ObjectStore, '{store._store}')"

    def test_a_pickled_store_starts_with_its_own_limits_and_health(self, store: BoundedStore) -> None:
        event_loop.run(self.set(store, "c/0", Buffer.from_bytes(b"\x01\x02")))
        store.health.failed(store.where("c/1"), 0.0)
        copy = pickle.loads(pickle.dumps(store))
        assert (copy.url, copy.options, copy.lists) == (store.url, store.options, store.lists)
        assert copy.health is not store.health
        found = event_loop.run(copy.get("c/0", default_buffer_prototype()))
        assert found is not None and found.to_bytes() == b"\x01\x02"

    def test_set_if_not_exists(self, store: BoundedStore) -> None:
        """zarr's test, on a server that honours a conditional write (moto 5.0.0 overwrites instead)."""
        import obstore

        inner = store._store.store
        obstore.put(inner, "probe", b"0")
        try:
            obstore.put(inner, "probe", b"1", mode="create")
        except obstore.exceptions.AlreadyExistsError:
            event_loop.run(super().test_set_if_not_exists(store))
        else:
            pytest.skip("this moto overwrites an object on a write asking If-None-Match")


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A folder served by a static web server on loopback, and its URL."""
    folder = tmp_path_factory.mktemp("served")
    with remote_fixtures.serve_static(folder) as (url, _tally):
        yield folder, url


class TestBoundedStoreOverHttp(_FilesOnDisk, _Contract):
    """BoundedStore read-only over a static web server on loopback (python's http.server: no
    listings, no writes, and no Range support, so each range is cut from the whole object), a
    folder per test. Its write tests are replaced: by their read-only part where they have one,
    else by a skip; its listing tests by the refusal it gives."""

    store_cls = BoundedStore

    def folder(self, store: BoundedStore) -> Path:
        return self.served

    @pytest.fixture
    def open_kwargs(self, http_root: tuple[Path, str]) -> dict[str, Any]:
        folder = uuid.uuid4().hex[:12]
        self.served = http_root[0] / folder
        self.served.mkdir()
        url, options = f"{http_root[1]}/{folder}", RemoteOptions(timeout_s=10.0)
        return {"store_cls": ObjectStore, "store": make_object_store(url, options), "read_only": True,
                "url": url, "options": options, "lists": False}

    @pytest.fixture
    def store_kwargs(self, open_kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"store": ObjectStore(open_kwargs["store"], read_only=True), "url": open_kwargs["url"],
                "options": open_kwargs["options"], "lists": False}

    def test_store_supports_writes(self, store: BoundedStore) -> None:
        assert store.read_only

    def test_store_repr(self, store: BoundedStore) -> None:
        assert repr(store) == f"WrapperStore(ObjectStore, '{store._store}')"

    def test_store_read_only(self, store: BoundedStore) -> None:
        assert store.read_only
        with pytest.raises(AttributeError):
            store.read_only = False  # type: ignore[misc]

    async def test_serializable_store(self, store: BoundedStore) -> None:
        await self.set(store, "foo", Buffer.from_bytes(b"\x01\x02\x03\x04"))
        copy = pickle.loads(pickle.dumps(store))
        assert copy == store and copy.read_only
        found = await copy.get("foo", prototype=default_buffer_prototype())
        assert found is not None and found.to_bytes() == b"\x01\x02\x03\x04"

    async def test_exists(self, store: BoundedStore) -> None:
        assert not await store.exists("foo/zarr.json")
        await self.set(store, "foo/zarr.json", Buffer.from_bytes(b"bar"))
        assert await store.exists("foo/zarr.json")

    @pytest.mark.parametrize("listing", ["list", "list_prefix", "list_dir", "is_empty", "getsize_prefix"])
    async def test_a_listing_is_refused_naming_the_url(self, store: BoundedStore, listing: str) -> None:
        async def ask() -> object:
            if listing == "list":
                return [key async for key in store.list()]
            if listing in ("list_prefix", "list_dir"):
                return [key async for key in getattr(store, listing)("foo/")]
            return await getattr(store, listing)("foo")

        with pytest.raises(ListingUnavailableError, match=re.escape(store.url)):
            await ask()

    _NO_LISTINGS = "a static web server lists no folders: test_a_listing_is_refused_naming_the_url"
    test_list = _refused(_NO_LISTINGS)
    test_list_prefix = _refused(_NO_LISTINGS)
    test_list_dir = _refused(_NO_LISTINGS)
    test_list_empty_path = _refused(_NO_LISTINGS)
    test_is_empty = _refused(_NO_LISTINGS)
    test_getsize_prefix = _refused(_NO_LISTINGS)
    test_clear = _refused(_NO_WRITES)
    test_delete = _refused(_NO_WRITES)
    test_delete_dir = _refused(_NO_WRITES)
    test_delete_nonexistent_key_does_not_raise = _refused(_NO_WRITES)
    test_set = _refused(_NO_WRITES)
    test_set_many = _refused(_NO_WRITES)
    test_set_not_open = _refused(_NO_WRITES)
    test_set_if_not_exists = _refused(_NO_WRITES)
    test_with_read_only_store = _refused(_NO_WRITES)
