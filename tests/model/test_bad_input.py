"""Bad input a user may open: each gives a clear message naming the path; nothing crashes.

(ecpfs-specific bad input — format_version 2, a wrong metric, ids/embeddings disagreeing — is
tested with the index semantics in test_ecpfs.py / test_validation.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.storage import opening as stores
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
from ecpfs_viewer.model.zarrtree.chunks import ChunkStatsError, chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind
from ecpfs_viewer.model.zarrtree.subset import SelectionError, read_subset


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match=r"no_such.zarr: no such file or directory"):
        open_store(tmp_path / "no_such.zarr")


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(StoreOpenError, match=r"empty.zarr: the folder is empty, not a Zarr store"):
        open_store(tmp_path / "empty.zarr")


def test_folder_without_zarr_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    (folder / "2024").mkdir(parents=True)
    (folder / "2024" / "a.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(StoreOpenError, match=r"photos: not a Zarr store"):
        open_store(folder)


def test_plain_file_and_bad_zips(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(StoreOpenError, match=r"notes.txt: not a Zarr store"):
        open_store(tmp_path / "notes.txt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("readme.txt", "no zarr here")
    with pytest.raises(StoreOpenError, match=r"other.zip: the zip holds no Zarr metadata"):
        open_store(tmp_path / "other.zip")


def test_permission_denied_message_from_the_access_check(two_clusters_copy: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """open_store asks os.access before listing; a refusal becomes 'permission denied'."""
    real_access = os.access
    monkeypatch.setattr(
        stores.os,
        "access",
        lambda path, mode, **kw: False if Path(path) == two_clusters_copy else real_access(path, mode, **kw),
    )
    with pytest.raises(StoreOpenError, match=r"two_clusters.zarr: permission denied"):
        open_store(two_clusters_copy)


_OPEN_AS_USER = """
import sys
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
try:
    open_store(sys.argv[1])
except StoreOpenError as exc:
    print(exc)
"""


def test_permission_denied_on_a_real_chmod_000_folder(two_clusters_path: Path, request: pytest.FixtureRequest) -> None:
    """The real thing: chmod 000. Root ignores permissions, so as root the check runs as 'nobody'."""
    base = Path(tempfile.mkdtemp(prefix="ecpfs-perm-"))  # under /tmp, reachable by 'nobody'
    target = base / "locked.zarr"
    try:
        shutil.copytree(two_clusters_path, target)
        target.chmod(0)
        if os.geteuid() == 0:
            base.chmod(0o755)
            result = request.getfixturevalue("nobody_python").run(
                ["-c", _OPEN_AS_USER, str(target)], capture_output=True, timeout=60)
            assert result.returncode == 0, result.stderr
            message = result.stdout.strip()
        else:
            with pytest.raises(StoreOpenError) as info:
                open_store(target)
            message = str(info.value)
        assert message == f"{target}: permission denied"
    finally:
        if target.exists():
            target.chmod(0o755)
        shutil.rmtree(base)


def test_root_zarr_json_not_json(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "zarr.json").write_text("not json at all")
    h = Hierarchy(open_store(two_clusters_copy))
    assert h.root().kind is NodeKind.ERROR
    assert "zarr.json: not valid JSON" in h.details("").error
    assert h.read_scalar("info/metric") == "L2"  # the rest stays browsable
    assert {n.name for n in h.children()} >= {"info", "lvl_1", "lvl_2"}


@pytest.mark.parametrize(
    "change,message",
    [
        ({"shape": "three"}, "lvl_1/node_1/embeddings/zarr.json"),
        ({"zarr_format": 2}, "zarr_format is 2, expected 3"),
        ({"codecs": [{"name": "bytes"}, {"name": "squash"}]}, "squash"),
        ({"data_type": "float128x"}, "float128x"),
    ],
)
def test_array_metadata_that_is_not_valid(two_clusters_copy: Path, change: dict, message: str) -> None:
    meta = two_clusters_copy / "lvl_1/node_1/embeddings/zarr.json"
    document = json.loads(meta.read_text())
    document.update(change)
    meta.write_text(json.dumps(document))
    h = Hierarchy(open_store(two_clusters_copy))
    details = h.details("lvl_1/node_1/embeddings")
    assert details.error and message in details.error
    assert details.error.startswith("lvl_1/node_1/embeddings")
    assert h.details("lvl_1/node_1/node_ids").error is None
    with pytest.raises(SelectionError) as info:
        read_subset(h, "lvl_1/node_1/embeddings", "")
    assert "lvl_1/node_1/embeddings" in str(info.value)
    with pytest.raises(ChunkStatsError, match=r"lvl_1/node_1/embeddings"):
        chunk_stats(h, "lvl_1/node_1/embeddings")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_truncated_or_corrupt_chunk(two_clusters_copy: Path, damage: str) -> None:
    chunk = two_clusters_copy / "rep_embeddings/c/0/0"
    raw = chunk.read_bytes()
    chunk.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00\x01garbage" * 4, "empty": b""}[damage])
    h = Hierarchy(open_store(two_clusters_copy))
    with pytest.raises(SelectionError) as info:
        read_subset(h, "rep_embeddings", "")
    assert str(info.value).startswith("rep_embeddings: ")
    assert str(info.value).endswith("(unreadable: chunk c/0/0)")
    assert chunk_stats(h, "rep_embeddings").n_present == 1  # statistics need no decoding
    assert read_subset(h, "rep_item_ids", "").data.tolist() == [0, 2, 4, 6]


def test_unknown_codec_in_a_chunk_read_names_the_path(two_clusters_copy: Path) -> None:
    meta = two_clusters_copy / "rep_item_ids/zarr.json"
    document = json.loads(meta.read_text())
    document["codecs"][1] = {"name": "zarrs.mystery", "configuration": {}}
    meta.write_text(json.dumps(document))
    h = Hierarchy(open_store(two_clusters_copy))
    assert "zarrs.mystery" in h.details("rep_item_ids").error
    with pytest.raises(SelectionError, match=r"rep_item_ids/zarr.json: .*zarrs.mystery"):
        read_subset(h, "rep_item_ids", "")


def test_a_corrupt_chunk_among_good_ones_is_named(tmp_path: Path) -> None:
    import zarr

    zarr.create_array(
        tmp_path / "s.zarr",
        shape=(40, 3),
        chunks=(10, 3),
        dtype="float32",
        compressors=[zarr.codecs.ZstdCodec(level=3)],
    )[:] = np.arange(120, dtype=np.float32).reshape(40, 3) + 1
    (tmp_path / "s.zarr/c/2/0").write_bytes(b"not zstd at all")
    h = Hierarchy(open_store(tmp_path / "s.zarr"))
    with pytest.raises(SelectionError) as info:
        read_subset(h, "", "5:35, :")
    assert str(info.value).endswith("(unreadable: chunk c/2/0)")
    assert read_subset(h, "", "0:20, :").data[0].tolist() == [1.0, 2.0, 3.0]  # the good chunks still read
