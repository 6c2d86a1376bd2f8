"""Chunk statistics: which chunks exist, what they cost, how much of a chunk an ecpfs node uses."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
from index_factory import hierarchy  # tests/ is on sys.path (conftest)
from locations import DATA, ZARRITA_V3  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.ecpfs.paths import is_node_array
from ecpfs_viewer.model.storage.opening import open_memory, open_store
from ecpfs_viewer.model.zarrtree.chunks import (
    MAX_ENUMERATED_CHUNKS,
    ChunkStats,
    ChunkStatsError,
    chunk_key,
    chunk_stats,
)
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def node_stats(h: Hierarchy, path: str) -> ChunkStats:
    """Chunk statistics as the metadata panel asks for them: node use told for ecpfs node arrays."""
    return chunk_stats(h, path, node_array=is_node_array(path))


# -- two_clusters --------------------------------------------------------------------------------------
def test_node_whose_only_chunk_is_all_fill(two_clusters_path: Path) -> None:
    stats = node_stats(hierarchy(two_clusters_path), "lvl_1/node_0/embeddings")
    assert stats.grid_shape == (1, 1) and stats.chunk_shape == (65536, 2)
    assert (stats.n_chunks, stats.n_present, stats.n_missing) == (1, 0, 1)
    assert stats.stored.tolist() == [[-1]] and stats.stored_bytes_total == 0
    assert stats.compression_ratio is None
    assert stats.logical_bytes == 1 * 2 * 4
    assert stats.underfill.rows_used == 1 and stats.underfill.chunk_rows == 65536
    assert stats.underfill.bytes_decoded_to_read_node == 0  # nothing stored, nothing decoded
    assert "missing: reads as fill value 0.0" in stats.describe_cell((0, 0))


def test_node_with_one_padded_chunk(two_clusters_path: Path) -> None:
    stats = node_stats(hierarchy(two_clusters_path), "lvl_1/node_1/embeddings")
    on_disk = (two_clusters_path / "lvl_1/node_1/embeddings/c/0/0").stat().st_size
    assert (stats.n_chunks, stats.n_present, stats.n_missing) == (1, 1, 0)
    assert stats.stored.tolist() == [[on_disk]] and stats.stored_bytes_total == on_disk
    assert stats.compression_ratio == pytest.approx(3 * 2 * 4 / on_disk)
    underfill = stats.underfill
    assert (underfill.rows_used, underfill.chunk_rows) == (3, 65536)
    assert underfill.fraction_used == pytest.approx(3 / 65536)
    assert underfill.bytes_decoded_to_read_node == 65536 * 2 * 4
    assert underfill.bytes_used == 24
    assert "3 of 65,536 chunk rows used" in underfill.describe()
    assert stats.key_of((0, 0)) == "c/0/0"
    assert stats.rows_of((0, 0)) == (0, 3)
    assert stats.describe_cell((0, 0)) == f"chunk (0, 0) · rows 0–2 · key c/0/0 · {on_disk} B stored"
    assert not stats.from_shard_index and stats.complete


def test_ids_and_root_arrays_have_underfill_others_not(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    assert node_stats(h, "lvl_2/node_0/item_ids").underfill.rows_used == 2
    assert node_stats(h, "lvl_1/node_1/node_ids").underfill.rows_used == 3
    assert node_stats(h, "index_root/embeddings").underfill.rows_used == 2
    assert node_stats(h, "rep_embeddings").underfill is None
    assert node_stats(h, "lvl_1/node_0/border").underfill is None
    assert is_node_array("lvl_12/node_340/embeddings") and not is_node_array("lvl_1/node_1/border")
    assert chunk_stats(h, "lvl_2/node_0/item_ids").underfill is None  # told only when the caller asks


def test_rank0_scalars(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    metric = chunk_stats(h, "info/metric")
    assert metric.grid_shape == () and metric.n_chunks == 1 and metric.n_present == 1
    assert int(metric.stored) == 10 and metric.key_of(()) == "c"
    normalized = chunk_stats(h, "info/is_normalized")  # false is the fill value: no chunk file
    assert normalized.n_missing == 1 and int(normalized.stored) == -1
    assert "missing" in normalized.describe_cell(())


def test_groups_and_broken_nodes_are_refused_with_a_message(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "rep_item_ids" / "zarr.json").write_text("{oops")
    h = hierarchy(two_clusters_copy)
    with pytest.raises(ChunkStatsError, match=r"lvl_1 is not an array"):
        chunk_stats(h, "lvl_1")
    with pytest.raises(ChunkStatsError, match=r"rep_item_ids/zarr.json: not valid JSON"):
        chunk_stats(h, "rep_item_ids")


# -- arrays written here with known missing chunks ---------------------------------------------------------
def _write(root: Path, name: str, data: np.ndarray, chunks: tuple[int, ...], **kwargs) -> None:
    array = zarr.create_array(root / name, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=0,
                              **kwargs)
    array[...] = data


@pytest.mark.parametrize("separator", ["/", "."])
def test_missing_chunks_and_sizes_match_the_files(tmp_path: Path, separator: str) -> None:
    data = np.zeros((10, 6), dtype="int32")
    data[0:4, 0:3] = 1   # chunk (0, 0)
    data[8:10, 3:6] = 2  # chunk (2, 1), a clipped edge chunk
    _write(tmp_path, "a.zarr", data, (4, 3),
           chunk_key_encoding={"name": "default", "separator": separator})
    stats = chunk_stats(hierarchy(tmp_path / "a.zarr"), "")
    assert stats.grid_shape == (3, 2) and stats.n_chunks == 6
    present = {(0, 0), (2, 1)}
    for index in np.ndindex(*stats.grid_shape):
        key = stats.key_of(index)
        assert key == "c" + "".join(separator + str(i) for i in index)
        file = tmp_path / "a.zarr" / key
        expected = file.stat().st_size if index in present else -1
        assert stats.stored[index] == expected
    assert stats.n_present == 2 == zarr.open_array(tmp_path / "a.zarr", mode="r").nchunks_initialized
    assert stats.stored_bytes_total == sum(int(stats.stored[i]) for i in present)
    assert stats.compression_ratio == pytest.approx((4 * 3 + 2 * 3) * 4 / stats.stored_bytes_total)
    assert stats.rows_of((2, 1)) == (8, 10)


def test_v2_arrays(tmp_path: Path) -> None:
    data = np.arange(20, dtype="<f4").reshape(4, 5)
    data[2:4] = 0
    for separator in (".", "/"):
        name = f"v2{'dot' if separator == '.' else 'slash'}.zarr"
        array = zarr.create_array(tmp_path / name, shape=data.shape, chunks=(2, 5), dtype=data.dtype,
                                  fill_value=0, zarr_format=2,
                                  chunk_key_encoding={"name": "v2", "separator": separator})
        array[...] = data
        stats = chunk_stats(hierarchy(tmp_path / name), "")
        assert stats.key_of((1, 0)) == f"1{separator}0"
        assert stats.stored[:, 0].tolist() == [(tmp_path / name / f"0{separator}0").stat().st_size, -1]
        assert stats.n_present == 1 and stats.n_missing == 1


def test_v3_array_with_v2_key_encoding_from_zarrs_data() -> None:
    root = DATA / "peer-data" / "zarrs" / "zarrs" / "tests" / "data" / "v3_zarr_python" / "array_zstd.zarr"
    document = json.loads((root / "zarr.json").read_text())
    stats = chunk_stats(hierarchy(root), "")
    listed = [p for p in root.rglob("*") if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs")]
    assert stats.n_present == len(listed)
    assert stats.stored_bytes_total == sum(p.stat().st_size for p in listed)
    assert stats.key_encoding[0] == document["chunk_key_encoding"]["name"]


def test_huge_grid_is_counted_but_mapped_only_in_part() -> None:
    rows = MAX_ENUMERATED_CHUNKS * 2
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [rows],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
    }
    h = Hierarchy(
        open_memory(
            {
                "big/zarr.json": json.dumps(meta).encode(),
                "big/c/0": b"\x01",
                "big/c/5": b"\x02",
                f"big/c/{rows - 1}": b"\x03",
            }
        )
    )
    stats = chunk_stats(h, "big")
    assert stats.n_chunks == rows and stats.n_present == 3 and stats.n_missing == rows - 3
    assert stats.stored.shape == (MAX_ENUMERATED_CHUNKS,) and not stats.complete
    assert stats.stored[5] == 1 and stats.stored_of((rows - 1,)) is None
    assert "not mapped" in stats.describe_cell((rows - 1,))
    assert any("covers the first 1,000,000" in note for note in stats.notes)


# -- sharded --------------------------------------------------------------------------------------------
def test_sharded_inner_chunks_from_the_index(tmp_path: Path) -> None:
    data = np.array([1, 1, 0, 0, 2, 2, 3, 3, 0, 0, 0, 0, 5, 0], dtype="uint16")
    _write(tmp_path, "s.zarr", data, (2,), shards=(4,))
    stats = chunk_stats(hierarchy(tmp_path / "s.zarr"), "")
    assert stats.from_shard_index
    assert stats.grid_shape == (7,) and stats.chunk_shape == (2,) and stats.shard_shape == (4,)
    assert (stats.stored >= 0).tolist() == [True, False, True, True, False, False, True]
    assert stats.n_present == 4 and stats.n_missing == 3
    shard_files = [tmp_path / "s.zarr" / "c" / str(i) for i in range(4)]
    assert [f.exists() for f in shard_files] == [True, True, False, True]  # shard 2 is all fill
    assert stats.stored_bytes_total == sum(f.stat().st_size for f in shard_files if f.exists())
    assert stats.key_of((3,)) == "c/1" and stats.key_of((6,)) == "c/3"
    assert "inner chunk (3) · rows 6–7 · in shard c/1" in stats.describe_cell((3,))


def test_corrupt_shard_index_is_reported_not_raised(tmp_path: Path) -> None:
    data = np.arange(1, 9, dtype="uint16")
    _write(tmp_path, "s.zarr", data, (2,), shards=(4,))
    shard = tmp_path / "s.zarr" / "c" / "1"
    raw = bytearray(shard.read_bytes())
    raw[-10] ^= 0xFF  # inside the index: the crc32c no longer matches
    shard.write_bytes(bytes(raw))
    stats = chunk_stats(hierarchy(tmp_path / "s.zarr"), "")
    assert list(stats.problems.values()) == ["shard c/1: index checksum does not match"]
    assert stats.n_present == 4  # the unreadable shard's inner chunks are estimated as present
    assert any("unreadable" in note for note in stats.notes)


def _sharded_arrays(h: Hierarchy) -> list[str]:
    return [
        n.path
        for n in h.children()
        if h.details(n.path).array is not None and h.details(n.path).array.shard_shape is not None
    ]


def test_sharded_peer_data_agrees_with_zarr_python() -> None:
    h = hierarchy(ZARRITA_V3 / "data.zarr")
    paths = _sharded_arrays(h)
    assert len(paths) >= 10
    for path in paths:
        stats = chunk_stats(h, path)
        array = zarr.open_array(ZARRITA_V3 / "data.zarr", path=path, mode="r")
        assert stats.grid_shape == array.cdata_shape, path
        assert stats.n_present <= array.nchunks_initialized, path  # zarr counts whole shards
        values = array[...]
        for index in np.ndindex(*stats.grid_shape):
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, stats.chunk_shape, strict=False))
            if stats.stored[index] < 0:  # a missing inner chunk must read as the fill value
                assert np.all(values[region] == array.fill_value), (path, index)
            else:  # the writer stores no all-fill inner chunk, so a present one holds data
                assert np.any(values[region] != array.fill_value), (path, index)


def test_sharded_arrays_in_zip_and_over_http(http_data_url: str) -> None:
    h_dir = hierarchy(ZARRITA_V3 / "data.zarr")
    h_zip = hierarchy(ZARRITA_V3 / "data.zipped_from_within.zarr.zip")
    h_http = index_hierarchy(open_store(f"{http_data_url}/peer-data/zarrita.js/fixtures/v3/data.zarr"))
    path = "2d.chunked.compressed.sharded.filled.i2"
    expected = chunk_stats(h_dir, path)
    for other in (h_zip, h_http):  # python's http.server ignores Range: the index is cut from the body
        stats = chunk_stats(other, path)
        assert stats.stored.tolist() == expected.stored.tolist()
        assert stats.n_present == expected.n_present == 15


def test_one_listing_per_array(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    h.details("lvl_2/node_1/embeddings")
    before = h.store.stats()
    chunk_stats(h, "lvl_2/node_1/embeddings")
    cost = h.store.stats() - before
    assert cost.listings == 1 and cost.requests == 1


def test_chunk_key_encodings() -> None:
    assert chunk_key((3, 0), "default", "/") == "c/3/0"
    assert chunk_key((1, 2), "default", ".") == "c.1.2"
    assert chunk_key((0, 1), "v2", ".") == "0.1"
    assert chunk_key((), "default", "/") == "c"
    assert chunk_key((), "v2", ".") == "0"


# -- one read path: zip and folder agree, shard indexes are counted ---------------------------------------
def _index_with_a_sharded_array(tmp_path: Path, two_clusters_path: Path) -> Path:
    """A copy of two_clusters with a sharded array (some inner chunks empty, one shard missing) added."""
    root = tmp_path / "i.zarr"
    shutil.copytree(two_clusters_path, root)
    data = np.array([1, 1, 0, 0, 2, 2, 3, 3, 0, 0, 0, 0, 5, 0], dtype="uint16")
    _write(root, "sharded", data, (2,), shards=(4,))
    return root


def test_chunk_stats_of_a_zip_and_of_its_folder_agree(tmp_path: Path, two_clusters_path: Path) -> None:
    root = _index_with_a_sharded_array(tmp_path, two_clusters_path)
    archive = tmp_path / "i.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # under a folder: keys carry the zip's Zarr root
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, f"top/i.zarr/{path.relative_to(root)}")
    h_dir, h_zip = hierarchy(root), hierarchy(archive)
    arrays: list[str] = []
    stack = [""]
    while stack:  # every array of the index, not only the top level
        for node in h_dir.children(stack.pop()):
            if node.kind.is_container:
                stack.append(node.path)
            elif h_dir.details(node.path).array is not None:
                arrays.append(node.path)
    assert "sharded" in arrays and len(arrays) > 10
    for path in arrays:
        on_disk, zipped = chunk_stats(h_dir, path), chunk_stats(h_zip, path)
        assert zipped.stored.tolist() == on_disk.stored.tolist(), path
        assert (zipped.n_present, zipped.stored_bytes_total) == (on_disk.n_present, on_disk.stored_bytes_total)
        assert zipped.problems == on_disk.problems == {}, path
    assert chunk_stats(h_zip, "sharded").n_present == 4


def test_shard_indexes_are_read_once_each_and_counted(tmp_path: Path) -> None:
    data = np.arange(1, 41, dtype="uint16")
    _write(tmp_path, "s.zarr", data, (2,), shards=(4,))  # 10 shards of 2 inner chunks
    h = hierarchy(tmp_path / "s.zarr")
    h.details("")
    before = h.store.stats()
    stats = chunk_stats(h, "")
    cost = h.store.stats() - before
    index_bytes = 16 * 2 + 4  # two (offset, length) pairs and a crc32c
    assert stats.n_present == 20 and not stats.problems
    assert cost.listings == 1 and cost.requests == 1 + 10
    assert cost.bytes_read == 10 * index_bytes


def test_unreadable_shard_index_is_a_problem_of_that_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ecpfs_viewer.model.storage import local_reads as stores  # where a store reads its files
    _write(tmp_path, "s.zarr", np.arange(1, 9, dtype="uint16"), (2,), shards=(4,))
    real = stores.read_file_range

    def refusing(path: str, byte_range: object) -> bytes | None:
        if path.endswith("c/1"):
            raise PermissionError(13, "Permission denied", path)
        return real(path, byte_range)  # type: ignore[arg-type]

    monkeypatch.setattr(stores, "read_file_range", refusing)
    stats = chunk_stats(hierarchy(tmp_path / "s.zarr"), "")
    assert stats.problems == {(1,): "shard c/1: cannot read its index (Permission denied)"}
    assert stats.n_present == 4  # shard 0 from its index, shard 1 estimated


def test_node_use_counts_every_chunk(tmp_path: Path) -> None:
    """3,295 rows in 2 chunks of 2,048: 3,295 of 4,096 rows used, not 'of 2,048'."""
    root = zarr.open_group(tmp_path / "i.zarr", mode="w")
    root.create_array("lvl_3/node_15/embeddings", shape=(3295, 2), chunks=(2048, 2), dtype="float32")[:] = 1
    underfill = node_stats(hierarchy(tmp_path / "i.zarr"), "lvl_3/node_15/embeddings").underfill
    assert (underfill.rows_used, underfill.chunks, underfill.rows_allocated) == (3295, 2, 4096)
    assert underfill.describe().startswith("3,295 of 4,096 chunk rows used in 2 chunks of 2,048 (80.44%)")


def test_a_huge_grid_says_how_much_was_declared_and_what_was_stored() -> None:
    meta = {"zarr_format": 3, "node_type": "array", "shape": [10**6, 128], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}  # zarr 3.4 requires endian
    entries = {"leaf/zarr.json": json.dumps(meta).encode(), **{f"leaf/c/0/{i}": b"\0" * 4 for i in range(3)}}
    stats = chunk_stats(Hierarchy(open_memory(entries)), "leaf")
    assert stats.notes[0] == "128,000,000 chunks declared; statistics computed from the 3 stored objects"
    assert stats.n_present == 3 and stats.stored.size <= MAX_ENUMERATED_CHUNKS
