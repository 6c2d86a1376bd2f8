"""Stamped paths held as one blob (model/storage/path_list.py): the same sequence of strings as the
tuple they came from, joined, taken and saved without a Python string each, and refused when the
bytes read back do not divide into paths."""

from __future__ import annotations

import io

import numpy as np
import pytest

from ecpfs_viewer.model.storage.path_list import PathList
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps

ODD = ("lvl_1/node_0/zarr.json", "", "naïve/name", "new\nline", "bad-\udcff-byte", "lvl_1/node_10/c/0/0")


def test_a_path_list_reads_back_every_path_as_given() -> None:
    held = PathList.of(ODD)
    assert len(held) == len(ODD) and list(held) == list(ODD) and held == ODD
    assert [held[i] for i in range(len(ODD))] == list(ODD) and held[-1] == ODD[-1]
    assert list(held[1:4]) == list(ODD[1:4]) and list(held[::-2]) == list(ODD[::-2])
    assert held.blob == "".join(ODD).encode("utf-8", "surrogatepass")  # the bytes of the names, nothing else
    with pytest.raises(IndexError):
        held[len(ODD)]
    assert PathList.of(()) == () and len(PathList.of(())) == 0 and PathList.of(held) is held


def test_joined_and_taken_keep_the_order_of_the_paths() -> None:
    parts = [PathList.of(ODD[:2]), PathList.of(()), PathList.of(ODD[2:])]
    assert PathList.joined(parts) == ODD
    held = PathList.of(ODD)
    assert held.taken([5, 0, 3, 3]) == (ODD[5], ODD[0], ODD[3], ODD[3])
    assert held.taken(np.zeros(0, np.int64)) == ()


@pytest.mark.parametrize(("blob", "offsets", "why"), [
    (b"abc", [0, 2], "the offsets do not divide the blob"),        # short of the end
    (b"abc", [1, 3], "the offsets do not divide the blob"),        # not from the start
    (b"abc", [0, 2, 1, 3], "the offsets do not divide the blob"),  # backwards
    (b"abc", [], "the offsets do not divide the blob"),
    ("é".encode(), [0, 1, 2], "a path starts inside a character"),
    (b"\xff\xfe", [0, 2], "codec"),                                # not UTF-8 at all
    (b"abc", np.array([0.0, 1.5, 3.0]), "not int64"),              # would be cast, the fraction dropped
])
def test_bytes_read_back_that_do_not_divide_into_paths_are_refused(blob, offsets, why) -> None:
    with pytest.raises(ValueError, match=why):
        PathList.read_back(blob, offsets if isinstance(offsets, np.ndarray) else np.asarray(offsets, np.int64))


def test_stamps_hold_their_paths_as_one_blob_and_save_them_whole() -> None:
    stamps = Stamps("local", ODD, np.arange(len(ODD), dtype=np.int64), np.ones((len(ODD), 5), np.int64))
    assert isinstance(stamps.paths, PathList)
    back = Stamps.from_bytes(bytes(stamps.to_bytes()))
    assert back.paths == ODD  # a newline in a name came back as one path (it split into two when joined by lines)
    assert np.array_equal(back.owners, stamps.owners) and np.array_equal(back.values, stamps.values)
    joined = Stamps.joined([stamps, stamps.subset([ALWAYS, 4])])
    assert joined is not None and joined.paths == (*ODD, ODD[4])


def test_stamps_saved_by_an_older_viewer_are_not_taken_for_these() -> None:
    """Their paths were one text, a line each: such an entry is made again, not read with the wrong paths."""
    out = io.BytesIO()
    np.savez(out, kind=np.frombuffer(b"local", np.uint8), paths=np.frombuffer(b"a\nb", np.uint8),
             owners=np.zeros(2, np.int64), values=np.zeros((2, 5), np.int64))
    with pytest.raises(ValueError, match="not stamps"):
        Stamps.from_bytes(out.getvalue())


def test_strings_read_at_once_are_the_paths_read_one_by_one() -> None:
    """PathList.strings decodes many at once (one text when the blob is ASCII): the same strings as []."""
    for paths in (ODD, ("lvl_1/node_0/zarr.json", "lvl_1/node_10/c/0/0", "")):
        held = PathList.of(paths)
        assert held.strings() == list(paths) == list(held)
        assert held.strings([2, 0, 2]) == [paths[2], paths[0], paths[2]] and held.strings([]) == []


def test_a_few_strings_of_many_and_an_iteration_read_the_same_paths(monkeypatch) -> None:
    """A few paths of a large ASCII list are decoded each alone, many through one text, and an
    iteration goes a block at a time: the same strings every way."""
    from ecpfs_viewer.model.storage import path_list

    paths = [f"lvl_3/node_{n}/embeddings/c/0/0" for n in range(100)]
    held = PathList.of(paths)
    assert held.strings([7, 3]) == [paths[7], paths[3]] and held.strings(range(50)) == paths[:50]
    monkeypatch.setattr(path_list, "_ITER_BLOCK", 7)
    assert list(held) == paths and list(PathList.of(ODD)) == list(ODD)
