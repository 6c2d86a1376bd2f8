"""A shard index is checked against its shard before any inner chunk is read (issue 34, "Sharding
checked against the file"): an entry that points past the end of the shard, wraps past 2^64,
overlaps the index itself, holds no bytes or is half empty makes the leaf "could not be read",
naming the entry, through every reader (Hierarchy, batch reader, a subset) and whether zarr reads
the shard whole or in part; only an entry that is genuinely empty reads as the fill value. No
numpy warning is raised on the way."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hostile_builders import NODE, SHARD_DAMAGE, set_shard_entry, sharded_leaf
from index_factory import hierarchy

from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader, read_whole_arrays
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, ArrayUnanswered

EXPECTED = np.array([[10.0, 10.0], [10.4, 10.4]], dtype=np.float32)  # two_clusters' NODE
# the shard is the whole leaf (read whole), or 4 rows of which the leaf uses 2 (read in part)
SHARDINGS = {"whole": None, "in-part": (4, 2)}


def _damaged(store: Path, damage: str, sharding: str, compressed: bool = False) -> None:
    shard = sharded_leaf(store, shards=SHARDINGS[sharding], compressed=compressed)
    entries = 2 if SHARDINGS[sharding] is None else 4
    set_shard_entry(shard, entries, 1, *SHARD_DAMAGE[damage](shard.stat().st_size))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("compressed", [False, True], ids=["bytes", "zstd"])
@pytest.mark.parametrize("sharding", list(SHARDINGS))
@pytest.mark.parametrize("damage", list(SHARD_DAMAGE))
def test_a_damaged_shard_entry_is_could_not_be_read_naming_it(two_clusters_copy: Path, damage: str, sharding: str,
                                                              compressed: bool) -> None:
    _damaged(two_clusters_copy, damage, sharding, compressed)
    with pytest.raises(ArrayReadError) as raised:
        hierarchy(two_clusters_copy).read_array(NODE)
    message = str(raised.value)
    assert f"{NODE}/c/0/0: shard index entry for inner chunk (1, 0) points at" in message, message
    assert message.endswith("could not be read"), message
    assert not isinstance(raised.value, ArrayUnanswered)  # a fact about the store, not a failure on the way


def test_the_message_says_where_the_entry_points(two_clusters_copy: Path) -> None:
    shard = sharded_leaf(two_clusters_copy)
    size = shard.stat().st_size
    set_shard_entry(shard, 2, 1, 9_000, 1_024)
    with pytest.raises(ArrayReadError, match=f"points at bytes 9,000–10,024 of a {size}-byte shard; could not be read"):
        hierarchy(two_clusters_copy).read_array(NODE)
    set_shard_entry(shard, 2, 1, 2**64 - 8, 16)
    with pytest.raises(ArrayReadError, match=re.escape("16 bytes from byte 18,446,744,073,709,551,608, past 2^64")):
        hierarchy(two_clusters_copy).read_array(NODE)
    set_shard_entry(shard, 2, 1, size - 20, 8)
    with pytest.raises(ArrayReadError, match="inside the shard's own index"):
        hierarchy(two_clusters_copy).read_array(NODE)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("sharding", list(SHARDINGS))
def test_every_reader_refuses_the_leaf_and_reads_its_neighbours(two_clusters_copy: Path, sharding: str) -> None:
    _damaged(two_clusters_copy, "wraps-2-64", sharding)
    h = hierarchy(two_clusters_copy)
    ids = "lvl_2/node_2/item_ids"
    found = ArrayBatchReader(h).read_each([NODE, ids, "lvl_2/node_1/embeddings"])
    assert isinstance(found[0], ArrayReadError) and "inner chunk (1, 0)" in str(found[0])
    assert list(found[1]) == [4, 5]  # type: ignore[arg-type]  # one bad array spoils only itself
    whole = read_whole_arrays(h, [NODE])
    assert isinstance(whole[0], ArrayReadError) and "could not be read" in str(whole[0])
    with pytest.raises(ArrayReadError, match="inner chunk"):  # a subset (the data pane's read)
        h.read_array(NODE, (slice(0, 1), slice(None)))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("sharding", list(SHARDINGS))
def test_a_genuinely_empty_entry_still_reads_as_the_fill_value(two_clusters_copy: Path, sharding: str) -> None:
    shard = sharded_leaf(two_clusters_copy, shards=SHARDINGS[sharding])
    set_shard_entry(shard, 2 if SHARDINGS[sharding] is None else 4, 1, 2**64 - 1, 2**64 - 1)
    values = hierarchy(two_clusters_copy).read_array(NODE)
    np.testing.assert_array_equal(values, [EXPECTED[0], [0, 0]])


@pytest.mark.parametrize("sharding", list(SHARDINGS))
def test_an_undamaged_shard_reads_as_written(two_clusters_copy: Path, sharding: str) -> None:
    sharded_leaf(two_clusters_copy, shards=SHARDINGS[sharding], compressed=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(hierarchy(two_clusters_copy).read_array(NODE), EXPECTED)


def test_a_shard_truncated_below_its_index_is_could_not_be_read(two_clusters_copy: Path) -> None:
    shard = sharded_leaf(two_clusters_copy)
    shard.write_bytes(b"")  # zarr 3.1 takes an empty shard for a missing one (the fill value)
    with pytest.raises(ArrayReadError, match="0 bytes, too short for its index of 36 bytes; could not be read"):
        hierarchy(two_clusters_copy).read_array(NODE)
