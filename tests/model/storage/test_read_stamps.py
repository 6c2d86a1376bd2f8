"""Stamps taken by the reads themselves (model/storage/read_stamps.py): each expected file stamped
as it is opened, before its bytes are read, the same stamps a separate stamping gives, the files not read stamped
at the end, and nothing stamped outside the recording."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from file_events import stats_and_reads

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.read_stamps import ReadStamps
from ecpfs_viewer.model.storage.stamps import stamp_local


def _folder(tmp_path: Path) -> list[str]:
    (tmp_path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    keys = []
    for i in range(40):
        key = f"n{i % 4}/f{i}"
        (tmp_path / f"n{i % 4}").mkdir(exist_ok=True)
        if i % 9 != 4:  # every ninth absent
            (tmp_path / key).write_bytes(bytes([i]) * (i + 1))
        keys.append(key)
    return keys


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """('stat' | 'read', path) of every stamp and every local file read, in the order made."""
    return stats_and_reads(monkeypatch, apart="stat")


def test_each_expected_file_is_stamped_right_before_it_is_read(tmp_path: Path, events) -> None:
    keys = _folder(tmp_path)
    store = open_store(str(tmp_path))
    events.clear()
    reads = ReadStamps(str(tmp_path))
    expected = keys[::2]
    reads.expect((key, n) for n, key in enumerate(expected))
    with reads.recording():
        values = store.read_many_or_errors(keys)
    assert [v is None for v in values] == [not (tmp_path / k).exists() for k in keys]
    prefix = str(tmp_path) + "/"
    order = [(what, path.removeprefix(prefix)) for what, path in events]
    want = [step for key in keys for step in (
        ((("stat", key),) if key in expected else ()) + ((("read", key),) if (tmp_path / key).exists() else ()))]
    assert order == want  # fails when the stamps are taken in a batch before the reads
    stamped = reads.stamps()
    alone = stamp_local(str(tmp_path), [(key, n) for n, key in enumerate(expected)], walk=False)
    assert list(stamped.paths) == expected and stamped.owners.tolist() == alone.owners.tolist()
    assert stamped.values.tolist() == alone.values.tolist()
    assert (stamped.values[expected.index("n0/f4")] == -1).all()  # an absent file: its absent row


def test_files_expected_but_not_read_are_stamped_when_the_stamps_are_taken(tmp_path: Path, events) -> None:
    keys = _folder(tmp_path)
    store = open_store(str(tmp_path))
    events.clear()
    reads = ReadStamps(str(tmp_path))
    reads.expect([(keys[0], 7), (keys[1], 8)])
    with reads.recording():
        store.read_many_or_errors([keys[0]])
    assert [what for what, _ in events] == ["stat", "read"]
    stamped = reads.stamps()
    assert [what for what, _ in events] == ["stat", "read", "stat"]  # keys[1], at the end
    alone = stamp_local(str(tmp_path), [(keys[0], 7), (keys[1], 8)], walk=False)
    assert stamped.values.tolist() == alone.values.tolist()


def test_reads_outside_the_recording_stamp_nothing(tmp_path: Path, events) -> None:
    keys = _folder(tmp_path)
    store = open_store(str(tmp_path))
    events.clear()
    reads = ReadStamps(str(tmp_path))
    reads.expect((key, 0) for key in keys)
    with reads.recording():
        pass
    store.read_many_or_errors(keys)
    assert events and all(what == "read" for what, _ in events)


def test_the_rows_taken_cost_a_few_bytes_a_file(tmp_path: Path) -> None:
    """600,000 leaf documents' rows held as Python tuples took about 200 MB more at 10M (and the
    collector's passes over them seconds): the rows go into an array."""
    import tracemalloc

    (tmp_path / "f").write_bytes(b"x")
    keys = [f"lvl_3/node_{i}/zarr.json" for i in range(100_000)]
    path = str(tmp_path / "f")
    tracemalloc.start()
    try:
        reads = ReadStamps(str(tmp_path))
        reads.expect((key, n) for n, key in enumerate(keys))
        for slot in range(len(keys)):
            reads.take(slot, path)
        stamped = reads.stamps()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(stamped.paths) == len(keys) and (stamped.values[:, 2] == 1).all()
    assert peak / len(keys) < 420, peak / len(keys)  # bytes a file (about 350; held as tuples: 566)


def test_rows_another_process_took_are_kept_for_files_not_stamped_here(tmp_path: Path, events) -> None:
    keys = _folder(tmp_path)
    store = open_store(str(tmp_path))
    reads = ReadStamps(str(tmp_path))
    reads.expect((key, n) for n, key in enumerate(keys[:6]))
    with reads.recording():
        store.read_many_or_errors([keys[0]])  # stamped here
    elsewhere = stamp_local(str(tmp_path), [(key, 0) for key in [keys[0], keys[2], keys[3], "n9/not-expected"]],
                            walk=False)
    elsewhere.values[:] = [[i + 1] * 5 for i in range(4)]  # what the other process saw (made up here)
    reads.put(elsewhere)
    events.clear()
    stamped = reads.stamps()
    assert [path.removeprefix(str(tmp_path) + "/") for _, path in events] == [keys[1], keys[4], keys[5]]
    alone = stamp_local(str(tmp_path), [(key, n) for n, key in enumerate(keys[:6])], walk=False)
    assert stamped.values[0].tolist() == alone.values[0].tolist()  # its own stamp, not the other's
    assert stamped.values[2].tolist() == [2] * 5 and stamped.values[3].tolist() == [3] * 5
    assert list(stamped.paths) == keys[:6] and stamped.owners.tolist() == list(range(6))


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets on this platform")
def test_a_file_that_cannot_be_opened_is_stamped_by_its_path_before_the_open_is_tried_again(
        tmp_path: Path, events) -> None:
    """A socket in place of a chunk: it stats, but opening it fails (ENXIO) and leaves no
    descriptor to stamp. Its stamp is its stat taken before a second open, not the absent row."""
    keys = _folder(tmp_path)
    listening = socket.socket(socket.AF_UNIX)
    try:
        listening.bind(str(tmp_path / "n1" / "socket"))
        store = open_store(str(tmp_path))
        reads = ReadStamps(str(tmp_path))
        reads.expect([("n1/socket", 0), (keys[1], 1)])
        events.clear()
        with reads.recording():
            values = store.read_many_or_errors(["n1/socket", keys[1]])
        assert isinstance(values[0], OSError) and values[1] == (tmp_path / keys[1]).read_bytes()
        prefix = str(tmp_path) + "/"
        assert [(what, path.removeprefix(prefix)) for what, path in events] == [
            ("stat", "n1/socket"), ("stat", keys[1]), ("read", keys[1])]
        stamped = reads.stamps()
        alone = stamp_local(str(tmp_path), [("n1/socket", 0), (keys[1], 1)], walk=False)
        assert stamped.values.tolist() == alone.values.tolist()
        assert (stamped.values[0] != -1).all()  # fails when a failed open is stamped as absent
    finally:
        listening.close()
