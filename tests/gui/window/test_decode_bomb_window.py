"""Issue 34's bomb row in the window: `--select` of a leaf's embeddings array whose one chunk is a
decode bomb ends with the picture, within tens of MB of the same run on the clean index (it decoded
the chunk in two tasks, each to the whole bomb, and ran out of memory at 4 GiB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from decode_bombs import LEAF, MARGIN_KB, bombed, peak_run
from index_factory import build_clustered_index
from PySide6.QtGui import QImage


@pytest.mark.parametrize("kind", ["zstd without a declared size", "gzip"])
def test_selecting_a_bomb_array_shows_it_within_tens_of_mb(tmp_path: Path, kind: str) -> None:
    clean = build_clustered_index(tmp_path, items=600, dim=64, levels=2)
    index = bombed(clean, tmp_path, kind)
    shot = tmp_path / "bomb.png"
    done, peak = peak_run(str(index), "--select", f"{LEAF}/embeddings", "--screenshot", str(shot),
                          tmp_path=tmp_path)
    _, clean_peak = peak_run(str(clean), "--select", f"{LEAF}/embeddings", "--screenshot", str(tmp_path / "c.png"),
                             tmp_path=tmp_path / "clean")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert QImage(str(shot)).width() == 1280
    assert peak < clean_peak + MARGIN_KB, (peak, clean_peak)
