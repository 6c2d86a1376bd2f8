"""Nothing of the user's is ever deleted: `build --overwrite`, the Build window and a tune's clean-up
replace or remove only a folder that holds an ecpfs index and nothing else (issue 34)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build import builder
from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.build.errors import BuildError
from ecpfs_viewer.model.build.output import remove_stale_builds
from ecpfs_viewer.model.build.replaceable import foreign_member, remove_index, replace_refusal
from ecpfs_viewer.model.tuning.tune import TuneCancelled, TuneGrid, TuneSettings, tune
from ecpfs_viewer.model.tuning.workdir import remove_stale_work
from tests.locations import TWO_CLUSTERS
from tests.tune_data import CLUSTER, cluster_rows

PARAMS = BuildParams(levels=2, target_cluster_items=2)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "base.npy"
    np.save(path, np.random.default_rng(3).standard_normal((40, 4)).astype(np.float32))
    return path


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_index_this_app_built_and_the_upstream_fixture_are_replaceable(tmp_path: Path, src: Path) -> None:
    out = tmp_path / "built.zarr"
    build_index(src, out, PARAMS)
    assert foreign_member(out) is None and replace_refusal(out) is None
    assert foreign_member(TWO_CLUSTERS) is None and replace_refusal(TWO_CLUSTERS) is None
    (tmp_path / "empty").mkdir()
    assert replace_refusal(tmp_path / "empty") is None


def _group_with_notes(folder: Path) -> None:
    folder.mkdir()
    (folder / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    (folder / "notes").mkdir()
    (folder / "notes" / "keep.txt").write_text("mine")


def _index_with(tmp_path: Path, src: Path, extra: str) -> Path:
    """An index this app built, plus one thing of the user's (``extra`` names which)."""
    out = tmp_path / "grouped"
    build_index(src, out, PARAMS)
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "precious.txt").write_text("mine")
    if extra == "dataset array":
        (out / "dataset" / "c" / "0").mkdir(parents=True)
        (out / "dataset" / "zarr.json").write_text("{}")
        (out / "dataset" / "c" / "0" / "0").write_bytes(b"\0" * 16)
    elif extra == "file in a chunk folder":
        (out / "lvl_2" / "node_0" / "embeddings" / "c" / "notes.txt").write_text("mine")
    elif extra == "link to a folder outside":
        os.symlink(outside, out / "lvl_1" / "node_0" / "embeddings" / "c" / "7")
    elif extra == "link to a file outside":
        os.symlink(outside / "precious.txt", out / "lvl_2" / "node_1" / "item_ids" / "c" / "9")
    elif extra == "file beside the info arrays":
        (out / "info" / "README").write_text("mine")
    return out


EXPECTED_MEMBER = {
    "dataset array": "dataset/c/0/0",
    "file in a chunk folder": "lvl_2/node_0/embeddings/c/notes.txt",
    "link to a folder outside": "lvl_1/node_0/embeddings/c/7",
    "link to a file outside": "lvl_2/node_1/item_ids/c/9",
    "file beside the info arrays": "info/README",
}


@pytest.mark.parametrize("extra", sorted(EXPECTED_MEMBER))
def test_overwrite_refuses_an_index_holding_something_else(tmp_path: Path, src: Path, extra: str) -> None:
    out = _index_with(tmp_path, src, extra)
    before, outside = _tree(out), _tree(tmp_path / "outside")
    with pytest.raises(BuildError) as caught:
        build_index(src, out, PARAMS, overwrite=True)
    member = EXPECTED_MEMBER[extra]
    assert str(caught.value) == f"{out}: holds {member}, which is not part of an ecpfs index; not replaced"
    assert _tree(out) == before and _tree(tmp_path / "outside") == outside
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.npy", "grouped", "outside"]


def test_overwrite_refuses_a_plain_group_with_notes(tmp_path: Path, src: Path) -> None:
    """The row of issue 34: a root zarr.json (a plain group) and notes/keep.txt."""
    out = tmp_path / "grouped"
    _group_with_notes(out)
    with pytest.raises(BuildError, match=r"grouped: holds notes/keep\.txt, which is not part of an ecpfs index"):
        build_index(src, out, PARAMS, overwrite=True)
    assert (out / "notes" / "keep.txt").read_text() == "mine"


def test_overwrite_refuses_a_group_alone_a_file_and_a_link(tmp_path: Path, src: Path) -> None:
    group = tmp_path / "group"
    group.mkdir()
    (group / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    with pytest.raises(BuildError, match=r"group: holds no ecpfs index .* only zarr\.json; not replaced"):
        build_index(src, group, PARAMS, overwrite=True)
    assert (group / "zarr.json").exists()

    plain = tmp_path / "photos"
    plain.mkdir()
    (plain / "cat.jpg").write_bytes(b"jpeg")
    with pytest.raises(BuildError, match=r"photos: holds cat\.jpg, which is not part of an ecpfs index"):
        build_index(src, plain, PARAMS, overwrite=True)
    assert (plain / "cat.jpg").exists()

    index = tmp_path / "real.zarr"
    build_index(src, index, PARAMS)
    link = tmp_path / "link.zarr"
    os.symlink(index, link)
    with pytest.raises(BuildError, match=r"link\.zarr: is a symbolic link"):
        build_index(src, link, PARAMS, overwrite=True)
    assert link.is_symlink() and foreign_member(index) is None


def test_what_appears_in_the_output_during_the_build_is_not_deleted(
        tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output is looked at again just before it is replaced: a file put there meanwhile stays."""
    out = tmp_path / "late.zarr"
    build_index(src, out, PARAMS)
    real_run = builder._write_tree

    def run_then_add_a_file(*args: object, **kwargs: object) -> object:
        result = real_run(*args, **kwargs)  # type: ignore[arg-type]
        (out / "notes.txt").write_text("written while the build ran")
        return result

    monkeypatch.setattr(builder, "_write_tree", run_then_add_a_file)
    with pytest.raises(BuildError, match=r"late\.zarr: holds notes\.txt, which is not part of an ecpfs index"):
        build_index(src, out, PARAMS, overwrite=True)
    assert (out / "notes.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.npy", "late.zarr"]  # the new build discarded


def test_remove_index_never_follows_a_link(tmp_path: Path, src: Path) -> None:
    out = _index_with(tmp_path, src, "link to a folder outside")
    assert not remove_index(out)
    assert out.exists()
    os.unlink(out / "lvl_1" / "node_0" / "embeddings" / "c" / "7")
    assert remove_index(out) and not out.exists()
    assert (tmp_path / "outside" / "precious.txt").read_text() == "mine"


def _dead_pid() -> int:
    """The id of a process that has ended (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_builds_folder_holding_someones_file_is_left(tmp_path: Path, src: Path) -> None:
    pid = _dead_pid()
    ours = tmp_path / f".a.zarr.building-{pid}-0123abcd"
    build_index(src, ours, PARAMS)
    theirs = tmp_path / f".b.zarr.building-{pid}-4567abcd"
    shutil.copytree(ours, theirs)
    (theirs / "keep.txt").write_text("mine")
    removed, _ = remove_stale_builds(tmp_path)
    assert [s.path for s in removed] == [ours]
    assert (theirs / "keep.txt").exists()


def test_a_stale_tune_folder_holding_someones_file_is_left(tmp_path: Path, src: Path) -> None:
    pid = _dead_pid()
    ours = tmp_path / f".ecpfs-tune-{pid}-aaaa"
    ours.mkdir()
    np.save(ours / "remaining.npy", np.zeros((2, 2), np.float32))
    build_index(src, ours / "l2_t2.zarr", PARAMS)
    theirs = tmp_path / f".ecpfs-tune-{pid}-bbbb"
    shutil.copytree(ours, theirs)
    (theirs / "l2_t2.zarr" / "keep.txt").write_text("mine")
    mine = tmp_path / f".ecpfs-tune-{pid}-cccc"
    mine.mkdir()
    (mine / "thesis.txt").write_text("mine")
    assert remove_stale_work([tmp_path]) == [ours]
    assert (theirs / "l2_t2.zarr" / "keep.txt").exists() and (mine / "thesis.txt").exists()


def test_a_failed_tune_leaves_a_kept_folder_that_got_someones_file(tmp_path: Path) -> None:
    """A tune that made its keep folder removes it when it fails, unless something else is in it now."""
    rows, queries = cluster_rows(tmp_path, clusters=8)
    grid = TuneGrid(levels=(1,), target_cluster_items=(CLUSTER, 2 * CLUSTER))
    keep = tmp_path / "kept"
    cancel = threading.Event()

    def on_variant(_result: object) -> None:
        (keep / "notes.txt").write_text("mine")
        cancel.set()

    with pytest.raises(TuneCancelled):
        tune(rows, grid, TuneSettings(keep=str(keep), queries=str(queries)), cancel=cancel, on_variant=on_variant)
    assert (keep / "notes.txt").read_text() == "mine"
