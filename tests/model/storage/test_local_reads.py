"""Local files read in order, side by side once the disk answers slowly (model/storage/local_reads.py,
side_by_side.py):
the same values in the same places either way, a failed file's error in its place, a chunk's stored
bound kept in the threads, no thread left behind, and no thread at all while the files come fast."""

from __future__ import annotations

import os
import tempfile
import threading
import tracemalloc
from pathlib import Path

import pytest

from ecpfs_viewer.model.storage import local_reads, page_cache, side_by_side
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.stamps import stamp_local
from ecpfs_viewer.model.storage.stored_bound import StoredBound, StoredTooLarge, stored_bounds


def _folder(tmp_path: Path, files: int = 60) -> list[tuple[str, bytes | None]]:
    """Files f0..f59 of different sizes, every seventh absent, one a folder: (key, what a read gives)."""
    expected: list[tuple[str, bytes | None]] = []
    for i in range(files):
        key = f"d{i % 3}/f{i}"
        (tmp_path / f"d{i % 3}").mkdir(exist_ok=True)
        if i % 7 == 3:
            expected.append((key, None))
            continue
        data = bytes([i % 251]) * (i * 37 + 1)
        (tmp_path / key).write_bytes(data)
        expected.append((key, data))
    return expected


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("cold_reads")}


def _disk(monkeypatch, cold: bool) -> None:
    """A disk that looks cold (or warm) both by the page cache's word and by how long files take."""
    monkeypatch.setattr(page_cache, "first_page_cached", lambda fd: not cold)
    monkeypatch.setattr(side_by_side, "COLD_SECONDS", -1.0 if cold else 3600.0)


def _counted_pools(monkeypatch) -> list[int]:
    started: list[int] = []
    pool = side_by_side.ThreadPoolExecutor
    monkeypatch.setattr(side_by_side, "ThreadPoolExecutor", lambda *a, **k: started.append(1) or pool(*a, **k))
    return started


@pytest.mark.parametrize("cold", [False, True])
def test_the_values_are_in_order_either_way_and_no_thread_is_left(tmp_path: Path, monkeypatch, cold: bool) -> None:
    expected = _folder(tmp_path)
    started = _counted_pools(monkeypatch)
    _disk(monkeypatch, cold)
    found = local_reads.read_local(str(tmp_path) + os.sep, [(key, None) for key, _ in expected])
    assert found == [data for _, data in expected]
    assert started == ([1] if cold else [])
    assert not _threads()  # the batch's threads ended with it


def test_a_failed_file_gives_its_error_in_place_and_a_bound_holds_in_the_threads(tmp_path: Path,
                                                                               monkeypatch) -> None:
    """A folder read as a file fails alone; a chunk stored past its bound (a context of the calling
    thread) is refused in the threads that read it side by side."""
    expected = _folder(tmp_path)
    _disk(monkeypatch, cold=True)
    requests: list[tuple[str, None]] = [(key, None) for key, _ in expected] + [("d1", None)]
    large = expected[-2][0]
    assert expected[-2][1] is not None and len(expected[-2][1]) > 100
    with stored_bounds({large: StoredBound(100, 100)}):
        found = local_reads.read_local(str(tmp_path) + os.sep, requests)
    at = len(expected) - 2
    assert isinstance(found[at], StoredTooLarge)
    assert found[:at] + found[at + 1:-1] == [data for _, data in expected[:at] + expected[at + 1:]]
    assert found[-1] is None or isinstance(found[-1], OSError)  # a folder is no file: absent, not its listing


def test_a_store_and_stamps_of_single_files_read_the_same_cold_or_warm(tmp_path: Path, monkeypatch) -> None:
    expected = _folder(tmp_path)
    (tmp_path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')  # a store to open
    keys = [key for key, _ in expected]
    warm_stamps = stamp_local(str(tmp_path), [(key, n) for n, key in enumerate(keys)], walk=False)
    store = open_store(str(tmp_path))
    warm = store.read_many_or_errors(keys)
    store.close()
    _disk(monkeypatch, cold=True)
    cold_stamps = stamp_local(str(tmp_path), [(key, n) for n, key in enumerate(keys)], walk=False)
    store = open_store(str(tmp_path))
    before = store.counter.snapshot().requests
    cold = store.read_many_or_errors(keys)
    assert store.counter.snapshot().requests - before == len(keys)  # counted once, in the calling thread
    store.close()
    assert warm == cold == [data for _, data in expected]
    assert list(warm_stamps.paths) == list(cold_stamps.paths) == keys
    assert (warm_stamps.values == cold_stamps.values).all() and (warm_stamps.owners == cold_stamps.owners).all()


def test_a_pause_of_the_process_among_the_first_files_starts_no_thread(monkeypatch) -> None:
    """A garbage collection (here a sleep) while the first files are done is not a cold disk: the
    median file decides, not their sum."""
    import time

    started: list[int] = []
    pool = side_by_side.ThreadPoolExecutor
    monkeypatch.setattr(side_by_side, "ThreadPoolExecutor", lambda *a, **k: started.append(1) or pool(*a, **k))
    monkeypatch.setattr(side_by_side, "COLD_SECONDS", 1e-3)  # a warm file takes far less
    calls = [lambda at=at: (time.sleep(side_by_side.PROBE_FILES * 2e-3) if at == 3 else None, at)[1]
             for at in range(4 * side_by_side.PROBE_FILES)]
    assert side_by_side.in_order(calls) == list(range(len(calls)))
    assert started == []
    assert side_by_side.looks_cold([0.0, 1.0, 1.0]) and not side_by_side.looks_cold([0.0, 0.0, 1.0])


def test_the_page_cache_tells_a_file_on_disk_from_one_in_memory() -> None:
    """Asked without waiting (RWF_NOWAIT): a file whose pages were dropped is not in memory, and is
    once read. The test's folder is the system's temporary one: tmpfs (where pytest's may be) keeps
    every page in memory and cannot be asked."""
    if not hasattr(os, "RWF_NOWAIT"):
        assert page_cache.first_page_cached(0) is None
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chunk"
        with path.open("wb") as out:
            out.write(os.urandom(20_000))
            out.flush()
            os.fsync(out.fileno())  # clean pages, which the kernel may drop
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            assert page_cache.first_page_cached(fd) is False
            os.read(fd, 1 << 16)
            assert page_cache.first_page_cached(fd) is True
        finally:
            os.close(fd)
    fifo = Path(tempfile.mkdtemp()) / "fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert page_cache.first_page_cached(fd) is None  # no page cache to ask: the times decide
    finally:
        os.close(fd)
        fifo.unlink()
        fifo.parent.rmdir()


@pytest.mark.parametrize("cached", [True, False])
def test_the_page_cache_not_the_times_decides_whether_files_are_read_side_by_side(monkeypatch, cached: bool) -> None:
    """Other threads of a busy process (a recall's readers and scorers) make a warm file wait for
    the interpreter lock as long as a cold one waits for the disk: the files' times said cold, and
    more threads only added turns. Here every file is slow by its time (COLD_SECONDS below zero);
    only files that were not in memory start threads."""
    started = _counted_pools(monkeypatch)
    monkeypatch.setattr(side_by_side, "COLD_SECONDS", -1.0)
    with tempfile.TemporaryDirectory() as folder:  # not tmpfs: see the test above
        expected = _folder(Path(folder))
        for key, data in expected:
            if data is not None:
                fd = os.open(Path(folder) / key, os.O_RDONLY)
                try:
                    os.fsync(fd)
                    if not cached:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
        found = local_reads.read_local(folder + os.sep, [(key, None) for key, _ in expected])
    assert found == [data for _, data in expected]
    assert started == ([] if cached else [1])


def test_the_page_cache_verdict_on_the_first_files() -> None:
    """Cold when a quarter of them were not in memory; no verdict when one could not be asked."""
    assert side_by_side.cache_says_cold([True] * 8) is False
    assert side_by_side.cache_says_cold([True] * 7 + [False]) is False
    assert side_by_side.cache_says_cold([True] * 6 + [False] * 2) is True
    assert side_by_side.cache_says_cold([False] * 8) is True
    assert side_by_side.cache_says_cold([True] * 7 + [None]) is None
    assert side_by_side.cache_says_cold([]) is None
    times_say_cold = [1.0] * side_by_side.PROBE_FILES
    assert side_by_side._is_cold(lambda: None, times_say_cold) is True
    assert side_by_side._is_cold(lambda: False, times_say_cold) is False
    assert side_by_side._is_cold(lambda: True, [0.0] * side_by_side.PROBE_FILES) is True


def test_a_large_cold_batch_makes_a_task_per_few_files_not_per_file(monkeypatch) -> None:
    """ThreadPoolExecutor.map makes a Future (with its lock and condition) per item whatever its
    chunksize: 90 MB for the 120,000 leaf documents of a 2M-item index statted cold."""
    import tracemalloc

    monkeypatch.setattr(side_by_side, "COLD_SECONDS", 0.0)  # every disk slower than that: cold

    def call() -> int:
        return 1

    calls = [call] * 100_000
    tracemalloc.start()
    try:
        found = side_by_side.in_order(calls)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == [1] * len(calls)
    assert peak < 20e6, f"{peak / 1e6:.0f} MB"  # a Future per file: about 75 MB
    assert not _threads()


@pytest.mark.parametrize("block", [7, 32_768])
def test_many_single_files_are_stamped_a_block_at_a_time_with_the_same_stamps(tmp_path: Path, monkeypatch,
                                                                              block: int) -> None:
    """Each stat row is a Python tuple until it is copied into the stamps' array: all at once, the
    600,000 leaf documents of a 10M index took 360 MB while `info` or a check stamped them."""
    from ecpfs_viewer.model.storage import stamps as stamps_module

    for folder in range(20):
        (tmp_path / f"f{folder}").mkdir()
        for name in range(1000):
            (tmp_path / f"f{folder}" / str(name)).write_bytes(b"x" * (name % 7))
    groups = [(f"f{folder}/{name}", folder) for folder in range(20) for name in range(1000)]
    groups.insert(5, ("f0/absent", 0))
    whole = stamp_local(str(tmp_path), groups, walk=False)
    monkeypatch.setattr(stamps_module, "STAMP_BLOCK", block)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        blocked = stamp_local(str(tmp_path), groups, walk=False)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert list(blocked.paths) == list(whole.paths) and (blocked.owners == whole.owners).all()
    assert (blocked.values == whole.values).all() and (blocked.values[5] == -1).all()  # the absent file: its row
    if block == 7:
        assert peak / len(groups) < 260  # bytes a path (about 200; all rows at once: about 500)


def test_stamps_of_a_batch_from_a_cold_disk_go_side_by_side_after_the_first_few(tmp_path: Path, monkeypatch) -> None:
    """A locate stamps each batch of 500 leaves' documents before reading them: on a cold disk a
    probe of 256 stats in a row before them (for the helper, which takes only many more) made a
    first locate at 10M 58 s instead of 48."""
    from ecpfs_viewer.model.storage import stamps as stamps_module

    for i in range(500):
        (tmp_path / f"f{i}").write_bytes(b"x")
    _disk(monkeypatch, cold=True)
    main, here = threading.get_ident(), []
    row = stamps_module.stat_row

    def stat_row(path: str) -> tuple[int, ...]:
        here.append(threading.get_ident() == main)
        return row(path)

    monkeypatch.setattr(stamps_module, "stat_row", stat_row)
    stamped = stamp_local(str(tmp_path), [(f"f{i}", i) for i in range(500)], walk=False)
    assert len(here) == 500 and sum(here) == side_by_side.PROBE_FILES  # the rest statted side by side
    assert (stamped.values[:, 2] == 1).all()  # every file's size


@pytest.mark.parametrize("cold", [False, True])
def test_a_long_read_makes_the_readers_of_a_slice_at_a_time(tmp_path: Path, monkeypatch, cold: bool) -> None:
    """A level's listing at 10M reads 200,000 documents in one call: their readers (7 objects a
    file, 120 MB) were all made before the first was read. The values are the same either way."""
    expected = _folder(tmp_path)
    _disk(monkeypatch, cold)
    monkeypatch.setattr(local_reads, "READ_SLICE", 20)
    sizes: list[int] = []
    real = local_reads.in_order

    def counted(calls, cold=None):  # type: ignore[no-untyped-def]
        sizes.append(len(calls))
        return real(calls, cold)

    monkeypatch.setattr(local_reads, "in_order", counted)
    found = local_reads.read_local(str(tmp_path) + os.sep, [(key, None) for key, _ in expected])
    assert found == [data for _, data in expected]
    assert sizes == [20, 20, 20]  # fails when every reader is made at once


def test_small_files_are_read_without_a_first_read_sized_allocation_each(tmp_path: Path) -> None:
    """os.read allocated 64 KiB for every file and shrank it after: from a cold disk, with threads
    reading side by side, that churn left the heap fragmented (884 MB resident for a cold
    `info --leaf-sizes` at 10M, 492 MB after). Each small file's bytes are copied out at their size."""
    from ecpfs_viewer.model.storage import local_files

    paths = []
    for i in range(50):
        (tmp_path / f"f{i}").write_bytes(bytes([i]) * (100 + i))
        paths.append(str(tmp_path / f"f{i}"))
    (tmp_path / "big").write_bytes(bytes(range(256)) * 300)  # past the first read: read again whole
    assert local_files.read_file(paths[0]) == bytes([0]) * 100  # this thread's buffer made
    tracemalloc.start()
    try:
        read = [local_files.read_file(path) for path in paths]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read == [bytes([i]) * (100 + i) for i in range(50)]
    assert peak < 32 << 10, peak  # about 50 files' bytes; os.read: at least 64 KiB
    assert local_files.read_file(str(tmp_path / "big")) == bytes(range(256)) * 300
    (tmp_path / "edge").write_bytes(b"e" * (1 << 16))  # exactly the first read's size
    assert local_files.read_file(str(tmp_path / "edge")) == b"e" * (1 << 16)
    (tmp_path / "empty").write_bytes(b"")
    assert local_files.read_file(str(tmp_path / "empty")) == b""
