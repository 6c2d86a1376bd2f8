"""Shared fixtures. Qt runs offscreen in every test; data lives in tests/data (see its README)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

DATA = Path(__file__).parent / "data"
TWO_CLUSTERS = DATA / "two_clusters.zarr"
PEER_DATA = DATA / "peer-data"


@pytest.fixture
def two_clusters_path() -> Path:
    """The upstream-built two_clusters index (read-only use: tests must not modify it)."""
    return TWO_CLUSTERS


@pytest.fixture
def two_clusters_copy(tmp_path: Path) -> Path:
    """A private, writable copy of two_clusters for tests that change or break the index."""
    target = tmp_path / "two_clusters.zarr"
    shutil.copytree(TWO_CLUSTERS, target)
    return target
