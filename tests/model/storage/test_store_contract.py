"""zarr-python's own store contract (``zarr.testing.store.StoreTests``), run on every store wrapper
of ours, so a zarr release that changes what a store must do shows up here first.

The suite has no asyncio plugin: :class:`_Contract` runs StoreTests' coroutine tests and fixtures
on the model's event loop (model/storage/event_loop.py), where the model runs its own reads.
A wrapper that refuses writes runs the read-only part: the fixture data is written through the
store it wraps, and each write test it cannot pass is overridden below with the reason.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import pickle
import uuid
import zipfile
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.buffer.cpu import Buffer
from zarr.storage import LocalStore, ZipStore
from zarr.testing.store import StoreTests

from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.counted_io import CountingStore, IOCounter
from ecpfs_viewer.model.storage.guarded import GuardedLocalStore, GuardedZipStore


def _on_the_model_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """A coroutine test of StoreTests as a plain one (same name, arguments and marks)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        event_loop.run(test(*args, **kwargs))

    return run


class _Contract(StoreTests[Any, Buffer]):
    buffer_cls = Buffer

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            test = getattr(cls, name)
            if name.startswith("test_") and inspect.iscoroutinefunction(test):
                setattr(cls, name, _on_the_model_loop(test))

    @pytest.fixture
    def store(self, open_kwargs: dict[str, Any]) -> Store:
        return event_loop.run(self.store_cls.open(**open_kwargs))

    @pytest.fixture
    def store_not_open(self, store_kwargs: dict[str, Any]) -> Store:
        return self.store_cls(**store_kwargs)

    def test_store_supports_writes(self, store: Store) -> None:
        assert store.supports_writes

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

    def test_a_pickled_store_reads_the_same_bytes_and_counts_afresh(self, store: CountingStore) -> None:
        event_loop.run(self.set(store, "c/0", Buffer.from_bytes(b"\x01\x02\x03")))
        assert store.get_sync("c/0") is not None
        copy = pickle.loads(pickle.dumps(store))
        found = copy.get_sync("c/0")
        assert found is not None and found.to_bytes() == b"\x01\x02\x03"
        assert copy.counter.snapshot().requests == 1  # its own count, from unpickling on
        assert store.counter.snapshot().requests == 1
        assert isinstance(copy.counter, IOCounter)


class TestGuardedLocalStore(_Contract):
    """GuardedLocalStore: a LocalStore whose reads are its own (regular files only, capped)."""

    store_cls = GuardedLocalStore

    async def set(self, store: GuardedLocalStore, key: str, value: Buffer) -> None:
        path = store.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value.to_bytes())

    async def get(self, store: GuardedLocalStore, key: str) -> Buffer:
        return Buffer.from_bytes((store.root / key).read_bytes())

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"root": str(tmp_path)}

    def test_store_repr(self, store: GuardedLocalStore) -> None:
        assert repr(store) == f"LocalStore('file://{store.root.as_posix()}')"
