"""Selection text a user types, the default view of an array, and capped subset reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import (
    SelectionError,
    chunk_selection_text,
    default_selection,
    parse_selection,
    read_subset,
)


@pytest.mark.parametrize("text,expected", [
    ("", (slice(0, 200, 1), slice(0, 64, 1))),
    ("...", (slice(0, 200, 1), slice(0, 64, 1))),
    ("0:100, :", (slice(0, 100, 1), slice(0, 64, 1))),
    ("5", (5, slice(0, 64, 1))),
    ("::10, 0:8", (slice(0, 200, 10), slice(0, 8, 1))),
    ("-20:", (slice(180, 200, 1), slice(0, 64, 1))),
    ("-1, -1", (199, 63)),
    ("..., 3", (slice(0, 200, 1), 3)),
    ("[10:20, 1]", (slice(10, 20, 1), 1)),
    ("150:999", (slice(150, 200, 1), slice(0, 64, 1))),  # slices clip like numpy
    ("50:10", (slice(50, 50, 1), slice(0, 64, 1))),
    (" 3 , ", (3, slice(0, 64, 1))),
])
def test_parse_selection(text: str, expected: tuple) -> None:
    assert parse_selection(text, (200, 64)) == expected
    reference = np.arange(200 * 64).reshape(200, 64)
    if text.strip() not in ("", "..."):
        assert np.array_equal(reference[expected], reference[eval(f"np.s_[{text.strip(' []')}]")])


@pytest.mark.parametrize("text,message", [
    ("a", "cannot parse 'a' (axis 0)"),
    ("1:x", "'x' is not an integer"),
    ("1:2:3:4", "a slice is start:stop:step"),
    ("200", "index 200 is out of range for axis 0 with size 200"),
    ("0, -65", "index -65 is out of range for axis 1 with size 64"),
    ("1, 2, 3", "too many indices: the array has 2 dimensions, 3 given"),
    ("::0", "slice step cannot be zero (axis 0)"),
    ("::-1", "negative steps are not supported"),
    ("..., ...", "'...' may appear only once"),
    ("1,,2", "empty index between commas"),
])
def test_parse_selection_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(SelectionError) as info:
        parse_selection(text, (200, 64))
    assert message in str(info.value)


def test_scalars_take_no_index() -> None:
    assert parse_selection("", ()) == ()
    with pytest.raises(SelectionError, match="the array has 0 dimensions, 1 given"):
        parse_selection("0", ())


@pytest.fixture
def arrays(tmp_path: Path) -> Hierarchy:
    """An ecpfs-like node with float16 embeddings, uint8 rep_embeddings, and strings and bools."""
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    node = root.create_group("lvl_1").create_group("node_0")
    emb = node.create_array("embeddings", shape=(300, 8), chunks=(128, 8), dtype="float16", fill_value=0)
    emb[...] = np.arange(2400, dtype=np.float16).reshape(300, 8) / 8
    reps = root.create_array("rep_embeddings", shape=(4, 2), chunks=(4, 2), dtype="uint8", fill_value=0)
    reps[...] = [[1, 2], [3, 4], [250, 255], [0, 7]]
    other = root.create_array("other_f16", shape=(3,), chunks=(3,), dtype="float16", fill_value=0)
    other[...] = [1.5, 2.5, 3.5]
    names = root.create_array("names", shape=(3,), chunks=(2,), dtype=str)
    names[...] = ["a", "bé", "c"]
    flags = root.create_array("flags", shape=(4,), chunks=(4,), dtype=bool)
    flags[...] = [True, False, True, True]
    big = root.create_array("big", shape=(4000, 3200), chunks=(4000, 3200), dtype="uint8", fill_value=0)
    assert big.shape == (4000, 3200)
    return Hierarchy(open_store(tmp_path / "s.zarr"))


def test_read_subset_keeps_the_stored_dtype_of_ecpfs_embeddings(arrays: Hierarchy) -> None:
    subset = read_subset(arrays, "lvl_1/node_0/embeddings", "-20:, ::2")
    assert subset.data.dtype == np.float16 and subset.stored_dtype == "float16"  # exported as stored
    assert subset.data.shape == (20, 4) and subset.offsets == (280, 0) and subset.steps == (1, 2)
    assert subset.elements == 80
    assert subset.data[0, 1] == np.float16(280 * 8 + 2) / 8
    reps = read_subset(arrays, "rep_embeddings", "")
    assert reps.data.dtype == np.uint8 and reps.data[2].tolist() == [250, 255]
    assert read_subset(arrays, "other_f16", "").data.dtype == np.float16


def test_read_subset_keeps_strings_and_bools(arrays: Hierarchy) -> None:
    assert read_subset(arrays, "names", "1:").data.tolist() == ["bé", "c"]
    flags = read_subset(arrays, "flags", "::3")
    assert flags.data.dtype == np.bool_ and flags.data.tolist() == [True, True]
    assert read_subset(arrays, "flags", "2").data.shape == () and read_subset(arrays, "flags", "2").offsets == ()


def test_read_subset_refuses_a_selection_above_the_cap(arrays: Hierarchy) -> None:
    with pytest.raises(SelectionError) as info:
        read_subset(arrays, "big", "")
    assert str(info.value) == "selection has 12,800,000 elements; the limit is 4,000,000"
    assert read_subset(arrays, "big", "0:10, 0:10").data.shape == (10, 10)
    with pytest.raises(SelectionError, match="selection has 2,400 elements; the limit is 100"):
        read_subset(arrays, "lvl_1/node_0/embeddings", "", max_elements=100)


def test_read_subset_of_a_group_or_bad_text(arrays: Hierarchy) -> None:
    with pytest.raises(SelectionError, match="lvl_1 is not an array"):
        read_subset(arrays, "lvl_1", "")
    with pytest.raises(SelectionError, match="out of range"):
        read_subset(arrays, "names", "7")


def test_default_selection_reads_at_most_the_first_chunk(arrays: Hierarchy) -> None:
    emb = arrays.details("lvl_1/node_0/embeddings").array
    assert default_selection(emb) == "0:128, :"
    assert default_selection(arrays.details("names").array) == "0:2"
    assert default_selection(arrays.details("flags").array) == ":"
    big = arrays.details("big").array  # one 12.8 M element chunk: capped to a viewable size
    text = default_selection(big)
    selection = parse_selection(text, big.shape)
    assert text == "0:312, :" and 312 * 3200 <= 1_000_000
    assert all(s.stop <= c for s, c in zip(selection, big.chunk_shape, strict=False))
    before = arrays.store.stats()
    read_subset(arrays, "lvl_1/node_0/embeddings", default_selection(emb))
    assert (arrays.store.stats() - before).requests == 1  # one chunk


def test_default_selection_of_two_clusters(two_clusters_path: Path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    assert default_selection(h.details("lvl_1/node_1/embeddings").array) == ":, :"
    assert default_selection(h.details("info/metric").array) == ""
    assert read_subset(h, "info/metric", "").data.item() == "L2"


def test_chunk_selection_text(arrays: Hierarchy) -> None:
    emb = arrays.details("lvl_1/node_0/embeddings").array
    assert chunk_selection_text(emb, (0, 0)) == "0:128, :"
    assert chunk_selection_text(emb, (2, 0)) == "256:300, :"  # the last chunk is clipped to the array
    subset = read_subset(arrays, "lvl_1/node_0/embeddings", chunk_selection_text(emb, (1, 0)))
    assert subset.offsets == (128, 0) and subset.data.shape == (128, 8)
    with pytest.raises(SelectionError, match="outside the chunk grid"):
        chunk_selection_text(emb, (3, 0))
    with pytest.raises(SelectionError, match="does not match 2 dimensions"):
        chunk_selection_text(emb, (0,))
    assert chunk_selection_text(arrays.details("names").array, (1,)) == "2:3"


def test_subset_reads_only_chunks_once_the_metadata_is_held(arrays: Hierarchy) -> None:
    """The array is built from the zarr.json already read for the tree: no second metadata read."""
    path = "lvl_1/node_0/embeddings"
    arrays.details(path)
    seen: list[str] = []
    store = arrays.store.zarr_store
    real_get = store.get

    async def recording_get(key, prototype, byte_range=None):  # type: ignore[no-untyped-def]
        seen.append(key)
        return await real_get(key, prototype, byte_range)

    store.get = recording_get  # type: ignore[method-assign]
    before = arrays.store.stats()
    read_subset(arrays, path, "100:200, :")  # rows 100-199 cross chunks 0 and 1
    assert sorted(seen) == [f"{path}/c/0/0", f"{path}/c/1/0"]
    assert (arrays.store.stats() - before).requests == 2


@pytest.mark.parametrize("separator", [".", "/"])
def test_damaged_chunk_is_named_by_the_arrays_own_key_encoding(tmp_path: Path, separator: str) -> None:
    array = zarr.create_array(tmp_path / "v2.zarr", shape=(4, 4), chunks=(2, 2), dtype="int32", fill_value=0,
                              zarr_format=2, chunk_key_encoding={"name": "v2", "separator": separator})
    array[...] = np.arange(16).reshape(4, 4)
    key = f"1{separator}0"
    (tmp_path / "v2.zarr" / key).write_bytes(b"not a chunk")
    h = Hierarchy(open_store(tmp_path / "v2.zarr"))
    with pytest.raises(SelectionError, match=rf"\(unreadable: chunk 1{separator}0\)$".replace(".", r"\.")):
        read_subset(h, "", "")
    assert read_subset(h, "", "0:2, :").data.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_a_read_is_refused_from_its_metadata_before_zarr_starts_it(tmp_path: Path) -> None:
    """Chunks visited, one decoded chunk, memory needed: each cap refused with a message, nothing read."""
    group = zarr.open_group(tmp_path / "caps.zarr", mode="w")
    group.create_array("tiny_chunks", shape=(10**6,), chunks=(1,), dtype="uint8")
    group.create_array("huge_chunk", shape=(10**15,), chunks=(10**14,), dtype="float32")
    h = Hierarchy(open_store(tmp_path / "caps.zarr"))
    h.array_details("tiny_chunks"), h.array_details("huge_chunk")  # metadata read; no chunk from here on
    before = h.store.stats()
    with pytest.raises(SelectionError, match=r"tiny_chunks: the read touches 200,000 chunks, over the 100,000 cap "
                                             r"\(ECPFS_VIEWER_MAX_CHUNKS_PER_READ\)"):
        read_subset(h, "tiny_chunks", "0:200000")
    with pytest.raises(SelectionError, match=r"huge_chunk: one chunk \[100000000000000\] decodes to .*over the "
                                             r"256 MB cap \(ECPFS_VIEWER_MAX_DECODED_CHUNK_MB\)"):
        read_subset(h, "huge_chunk", "0:10")
    assert (h.store.stats() - before).requests == 0
    assert read_subset(h, "tiny_chunks", "0:1000").data.shape == (1000,)
