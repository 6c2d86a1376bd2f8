"""`ecpfs-viewer recall --miss-map`: where recall is lost, as text and in --json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from command_runs import run
from defect_indexes import build_moved_leaf_index

from ecpfs_viewer.model.search import IndexReader


def test_recall_miss_map_names_the_node_where_the_moved_items_are_lost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    defect = build_moved_leaf_index(tmp_path)
    queries = tmp_path / "q.npy"
    np.save(queries, defect.vectors[:20] + np.float32(0.001))
    on_path = {s.path for s in IndexReader(defect.path).locate(int(defect.item_ids[0])).path}
    code, out, _ = run(capsys, "recall", str(defect.path), "--queries", str(queries), "--search-exp", "1,2",
                       "--miss-map", "--json")
    assert code == 0
    document = json.loads(out)
    assert [row["search_exp"] for row in document["rows"]] == [1, 2]
    miss_map = document["miss_map"]
    top = miss_map["lost_at"][0]
    assert top["path"] in on_path and top["share"] > 0.5
    first = miss_map["per_search_exp"][0]
    recall = document["rows"][0]["recall"]
    assert first["misses"] == round((1 - recall) * 20 * 10)
    code, out, _ = run(capsys, "recall", str(defect.path), "--queries", str(queries), "--search-exp", "1",
                       "--miss-map")
    assert code == 0 and out.startswith("# where recall is lost") and top["path"] in out.splitlines()[1]
    code, out, _ = run(capsys, "recall", str(defect.path), "--queries", str(queries), "--search-exp", "1", "--json")
    plain = json.loads(out)  # without the flag the JSON keeps its shape: miss_map is null
    assert plain.keys() == document.keys() and plain["miss_map"] is None
