"""The level page says where its statistics came from: computed now from the level's metadata, or
kept in the cache folder by an earlier process (the leaf level, while no leaf document changed)."""

from __future__ import annotations

from pathlib import Path

from index_factory import build_clustered_index, hierarchy

from ecpfs_viewer.gui.overview.level_page import level_rows
from ecpfs_viewer.model.ecpfs.leaf_stats_cache import read_leaf_stats, saved_leaf_stats
from ecpfs_viewer.model.ecpfs.summary import summarize


def test_leaf_statistics_from_the_cache_folder_are_said_to_be_so(tmp_path: Path) -> None:
    index = build_clustered_index(tmp_path, 3000, 8)
    h = hierarchy(index)
    summary = summarize(h)
    computed = read_leaf_stats(h, summary)  # and kept in the cache folder
    later = hierarchy(index)
    kept = saved_leaf_stats(later, summarize(later))
    assert kept is not None and kept.kept and not computed.kept
    assert dict(level_rows(computed, summary))["Computed in"].endswith("ms from metadata (no chunk decoded)")
    for reused in (False, True):  # reused: taken from the cache folder by validation first, not computed by it
        assert dict(level_rows(kept, summary, reused))["Computed in"] == (
            "an earlier process, kept in the cache folder (no leaf document has changed since)")
    assert dict(level_rows(computed, summary, True))["Computed in"].endswith("reused (computed by validation or an "
                                                                              "earlier visit)")
    sums = [dict(level_rows(stats, summary))["Sum of leaf sizes"] for stats in (kept, computed)]
    assert sums[0] == sums[1]
