"""The demo index: built from the bundled digits into the user cache on first use, then reused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build import demo
from ecpfs_viewer.model.ecpfs import summarize
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(demo.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_demo_vectors_are_the_uci_digits():
    vectors = demo.load_demo_vectors()
    assert vectors.shape == (1797, 64) and vectors.dtype == np.uint8
    assert vectors.min() == 0 and vectors.max() == 16  # 4x4 blocks of on-pixels: 0..16
    # the first digit of the file (a zero): row 0 as published in optdigits.tes
    assert vectors[0, :16].tolist() == [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0]


def test_demo_index_builds_into_the_cache_and_summarises(cache):
    progress = []
    path = demo.ensure_demo_index(progress=progress.append)
    assert path == demo.demo_index_path() == cache / demo.DEMO_INDEX_NAME
    assert progress and progress[-1].phase == "writing"
    assert progress[0].phase == "reading" and progress[0].message == "demo digits"
    assert sorted(p.name for p in cache.iterdir()) == [demo.DEMO_INDEX_NAME]  # the temporary .npy is gone
    summary = summarize(Hierarchy(open_store(str(path))))
    assert summary.layout.is_index
    assert (summary.total_items, summary.dim, summary.dtype) == (1797, 64, "uint8")
    assert (summary.levels, summary.metric, summary.representatives) == (2, "L2", 60)  # ceil(1797/30)
    assert summary.findings == ()


def test_demo_index_is_reused_and_rebuilt_when_incomplete(cache):
    path = demo.ensure_demo_index()
    stamp = (path / "zarr.json").stat().st_mtime_ns
    calls = []
    assert demo.ensure_demo_index(progress=calls.append) == path
    assert calls == [] and (path / "zarr.json").stat().st_mtime_ns == stamp  # not rebuilt

    (path / "lvl_2" / "zarr.json").unlink()  # a damaged cache
    assert not demo.demo_index_is_complete(path)
    demo.ensure_demo_index(progress=calls.append)
    assert calls and demo.demo_index_is_complete(path)


def test_cancelled_demo_build_leaves_the_cache_empty(cache):
    import threading

    from ecpfs_viewer.model.build.builder import BuildCancelled

    stop = threading.Event()

    def cancel_on_first_report(_progress):
        stop.set()

    with pytest.raises(BuildCancelled):
        demo.ensure_demo_index(progress=cancel_on_first_report, cancel=stop)
    assert list(cache.iterdir()) == []


def test_cache_dir_follows_xdg_when_not_overridden(tmp_path, monkeypatch):
    monkeypatch.delenv(demo.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert demo.cache_dir() == tmp_path / "xdg" / "ecpfs-viewer"
    monkeypatch.setenv(demo.CACHE_ENV, str(tmp_path / "mine"))
    assert demo.demo_index_path().parent == tmp_path / "mine"
