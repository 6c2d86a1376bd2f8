"""Builder: the upstream tree, the byte layout of the store, sizing, dtypes, cancel and safety."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

from ecpfs_viewer.model.build.builder import (
    BuildCancelled,
    BuildError,
    BuildParams,
    BuildProblem,
    BuildProgress,
    build_index,
    check_build,
    preview_build,
)
from ecpfs_viewer.model.ecpfs import sizing

TWO_CLUSTERS_POINTS = np.array(
    [(0, 0), (0.4, 0.4), (1, 1), (1.4, 1.4), (10, 10), (10.4, 10.4), (11, 11), (11.4, 11.4)],
    dtype=np.float32,
)
TC_PARAMS = BuildParams(levels=2, target_cluster_items=2, metric="L2")


def _files(root: Path) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fl in os.walk(root) for f in fl
    )


def _open(index: Path, path: str) -> zarr.Array:
    return zarr.open_array(LocalStore(str(index), read_only=True), path=path, mode="r")


@pytest.fixture
def tc_npy(tmp_path: Path) -> Path:
    p = tmp_path / "two_clusters.npy"
    np.save(p, TWO_CLUSTERS_POINTS)
    return p


@pytest.fixture
def tc_index(tmp_path: Path, tc_npy: Path) -> Path:
    out = tmp_path / "tc.zarr"
    build_index(tc_npy, out, TC_PARAMS)
    return out


def _random_npy(tmp_path: Path, rows: int, dim: int, dtype="float32", seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, dim))
    if np.dtype(dtype).kind in "iu":
        data = np.clip(data * 40 + (100 if dtype == "uint8" else 0), -128, 255)
    p = tmp_path / f"r{rows}x{dim}_{dtype}_{seed}.npy"
    np.save(p, data.astype(dtype))
    return p


def _tree(index: Path, levels: int) -> dict[tuple[int, int], list[int]]:
    """{(level, node): ids} read back with zarr-python by full paths."""
    out = {}
    for level in range(1, levels + 1):
        key = "item_ids" if level == levels else "node_ids"
        for name in sorted(os.listdir(index / f"lvl_{level}")):
            if name.startswith("node_"):
                node = int(name[5:])
                out[(level, node)] = _open(index, f"lvl_{level}/{name}/{key}")[:].tolist()
    return out


# ------------------------------------------------------------------------------- two_clusters


def test_two_clusters_tree_is_the_upstream_tree(tc_index: Path) -> None:
    assert _tree(tc_index, 2) == {
        (1, 0): [0], (1, 1): [1, 2, 3],
        (2, 0): [0, 1], (2, 1): [2, 3], (2, 2): [4, 5], (2, 3): [6, 7],
    }
    assert _open(tc_index, "rep_item_ids")[:].tolist() == [0, 2, 4, 6]
    np.testing.assert_array_equal(_open(tc_index, "index_root/embeddings")[:], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(
        _open(tc_index, "lvl_1/node_1/embeddings")[:], [[1, 1], [10, 10], [11, 11]]
    )


def test_two_clusters_matches_the_zarrs_fixture_file_for_file(tc_index: Path,
                                                             two_clusters_path: Path) -> None:
    assert _files(tc_index) == _files(two_clusters_path)
    for rel in _files(two_clusters_path):
        ours = (tc_index / rel).read_bytes()
        theirs = (two_clusters_path / rel).read_bytes()
        if rel.endswith("zarr.json"):
            a, b = json.loads(ours), json.loads(theirs)
            assert list(a) == list(b), rel  # same keys in the same order
            a.get("attributes", {}).pop("_ecpfs_viewer", None)
            b.get("attributes", {}).pop("_zarrs", None)
            assert a == b, rel
        else:
            assert ours == theirs, rel  # chunk bytes identical, zstd frames included


def test_group_and_array_metadata_text(tc_index: Path) -> None:
    assert (tc_index / "zarr.json").read_bytes() == b'{\n  "zarr_format": 3,\n  "node_type": "group"\n}'
    meta = json.loads((tc_index / "lvl_2/node_0/embeddings/zarr.json").read_text())
    assert meta["attributes"] == {
        "_ecpfs_viewer": {"description": "This array was created with ecpfs-viewer",
                          "version": meta["attributes"]["_ecpfs_viewer"]["version"]}
    }
    assert meta["codecs"] == [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
    ]
    metric = json.loads((tc_index / "info/metric/zarr.json").read_text())
    assert metric["data_type"] == "string" and metric["fill_value"] == ""
    assert metric["codecs"] == [{"name": "vlen-utf8"}]
    assert (tc_index / "info/metric/c").read_bytes() == bytes.fromhex("01000000020000004c32")
    assert (tc_index / "info/format_version/c").read_bytes() == b"\x01\x00\x00\x00"
    assert not (tc_index / "info/is_normalized/c").exists()  # false is the fill value
    border = json.loads((tc_index / "lvl_1/node_0/border/zarr.json").read_text())
    assert border["shape"] == [2] and border["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}]
    assert not (tc_index / "lvl_1/node_0/border/c").exists()
    # all-fill chunks are absent: node_0 holds representative 0 at (0, 0)
    assert not (tc_index / "lvl_1/node_0/embeddings/c").exists()
    assert not (tc_index / "lvl_1/node_0/node_ids/c").exists()


def test_zarr_python_reads_by_groups_and_by_paths(tc_index: Path) -> None:
    root = zarr.open_group(LocalStore(str(tc_index), read_only=True), mode="r")
    assert {"info", "index_root", "lvl_1", "lvl_2", "rep_embeddings", "rep_item_ids"} <= set(root.keys())
    via_group = root["lvl_1"]["node_1"]["embeddings"][:]
    via_path = _open(tc_index, "lvl_1/node_1/embeddings")[:]
    assert via_group.dtype == np.float32
    np.testing.assert_array_equal(via_group, via_path)
    assert root["info"]["metric"][()] == "L2"
    assert int(root["info/levels"][()]) == 2
    assert bool(root["info/is_normalized"][()]) is False
    assert int(root["info/total_items"][()]) == 8 == int(root["info/next_item_id"][()])


def test_normalized_flag_and_ip_metric_are_stored(tmp_path: Path) -> None:
    data = np.eye(4, dtype=np.float32)
    src = tmp_path / "unit.npy"
    np.save(src, data)
    out = tmp_path / "ip.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=1, metric="IP", is_normalized=True))
    assert _open(out, "info/metric")[()] == "IP"
    assert bool(_open(out, "info/is_normalized")[()]) is True
    assert (out / "info/is_normalized/c").read_bytes() == b"\x01"


# ------------------------------------------------------------------------------- sizing


@pytest.mark.parametrize(
    ("dim", "dtype", "rn", "rr"),
    [(2, "float32", 65536, 1048576), (128, "uint8", 4096, 65536), (128, "float32", 1024, 16384),
     (512, "float32", 256, 4096), (768, "float32", 170, 2730), (768, "float16", 341, 5461),
     (1024, "float32", 128, 2048)],
)
def test_chunk_rows_table(dim: int, dtype: str, rn: int, rr: int) -> None:
    assert sizing.chunk_rows(dim, dtype, 512 * 1024) == rn
    assert sizing.chunk_rows(dim, dtype, 8 * 1024 * 1024) == rr


def test_chunk_rows_refuses_budget_below_one_row() -> None:
    with pytest.raises(ValueError, match="smaller than one row"):
        sizing.chunk_rows(1024, "float32", 4095)


@pytest.mark.parametrize(("r", "levels", "ns"),
                         [(3125, 5, 6), (7776, 5, 7), (100000, 5, 11), (64, 3, 4), (1000, 3, 10),
                          (4, 2, 2), (100, 2, 10), (4000, 3, 16), (1, 3, 1)])
def test_fan_out_in_double_precision(r: int, levels: int, ns: int) -> None:
    assert sizing.fan_out(r, levels) == ns


@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8", "int8"])
def test_chunk_shapes_follow_the_stored_dtype(tmp_path: Path, dtype: str) -> None:
    src = _random_npy(tmp_path, 300, 16, "float32")
    out = tmp_path / f"{dtype}.zarr"
    build_index(src, out, BuildParams(levels=2, target_cluster_items=10, dtype=dtype,
                                      node_chunk_bytes=1024, rep_chunk_bytes=4096))
    rn = 1024 // (16 * sizing.itemsize(dtype))
    rr = 4096 // (16 * sizing.itemsize(dtype))
    for path, rows in (("index_root/embeddings", rn), ("rep_embeddings", rr)):
        meta = json.loads((out / path / "zarr.json").read_text())
        assert meta["data_type"] == dtype
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [rows, 16]
    ids = json.loads((out / "rep_item_ids/zarr.json").read_text())
    assert ids["chunk_grid"]["configuration"]["chunk_shape"] == [rr] and ids["data_type"] == "uint32"
    # a leaf with more rows than Rn is split over several chunks, padding the last one
    leaf = max((out / "lvl_2").iterdir(), key=lambda p: _open(out, f"lvl_2/{p.name}/item_ids").shape[0]
               if p.is_dir() else -1)
    n = _open(out, f"lvl_2/{leaf.name}/item_ids").shape[0]
    chunks = sorted(os.listdir(leaf / "embeddings" / "c"))
    assert len(chunks) == -(-n // rn)


def test_multi_chunk_arrays_read_back_identically(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((500, 8)).astype(np.float32)
    data[100:200] = 0.0  # whole all-zero chunks must be skipped but read back as zeros
    src = tmp_path / "z.npy"
    np.save(src, data)
    out = tmp_path / "z.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=1, node_chunk_bytes=8 * 32,
                                      rep_chunk_bytes=8 * 4 * 25))
    rep = _open(out, "rep_embeddings")
    np.testing.assert_array_equal(rep[:], data)
    assert rep.chunks == (25, 8)
    present = {int(p) for p in os.listdir(out / "rep_embeddings" / "c")}
    assert present == set(range(20)) - {4, 5, 6, 7}  # rows 100..199 are chunks 4..7
    np.testing.assert_array_equal(_open(out, "rep_item_ids")[:], np.arange(500))
    # every row of the source is in exactly one leaf with its own vector
    seen = []
    for name in os.listdir(out / "lvl_1"):
        if name.startswith("node_"):
            ids = _open(out, f"lvl_1/{name}/item_ids")[:]
            np.testing.assert_array_equal(_open(out, f"lvl_1/{name}/embeddings")[:], data[ids])
            assert list(ids) == sorted(ids)
            seen.extend(ids.tolist())
    assert sorted(seen) == list(range(500))


# ------------------------------------------------------------------------------- tree rules


def test_tie_rule_last_maximal_row_wins(tmp_path: Path) -> None:
    # four identical representatives: every vector ties on every root row, the last one wins
    data = np.ones((8, 3), dtype=np.float32)
    src = tmp_path / "ties.npy"
    np.save(src, data)
    out = tmp_path / "ties.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=2))
    tree = _tree(out, 1)
    assert tree == {(1, 3): list(range(8))}


def test_tie_rule_between_distinct_rows(tmp_path: Path) -> None:
    # reps at -1 and +1; item 0 lies exactly between them (distance tie) -> the later rep wins
    data = np.array([[-1.0], [0.0], [1.0], [0.0]], dtype=np.float32)
    src = tmp_path / "mid.npy"
    np.save(src, data)
    out = tmp_path / "mid.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=1))
    tree = _tree(out, 1)
    # rows: rep0=-1, rep1=0, rep2=1, rep3=0 ; row 1 and 3 are equal: both go to rep 3
    assert tree[(1, 3)] == [1, 3]
    assert (1, 1) not in tree


def test_every_item_in_exactly_one_leaf_and_reps_lead_their_nodes(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 3000, 8)
    out = tmp_path / "r.zarr"
    result = build_index(src, out, BuildParams(levels=3, target_cluster_items=10))
    R = 300
    ns = sizing.fan_out(R, 3)
    assert result.representatives == R and result.fan_out == ns
    tree = _tree(out, 3)
    leaves = [ids for (lvl, _), ids in tree.items() if lvl == 3]
    assert sorted(i for ids in leaves for i in ids) == list(range(3000))
    assert result.nodes_per_level == [sum(1 for k in tree if k[0] == lv) for lv in (1, 2, 3)]
    for lv, bound in enumerate(sizing.max_nodes_per_level(ns, R, 3), start=1):
        assert all(node < bound for (lvl, node) in tree if lvl == lv)
    # a representative placed at level l leads its own node at level l+1
    for (lvl, _node), ids in tree.items():
        if lvl < 3:
            for r in ids:
                assert (lvl + 1, r) in tree


def test_random_selection_is_reproducible_with_a_seed(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 500, 4)
    p = BuildParams(levels=2, target_cluster_items=7, rep_selection="random", seed=42)
    a, b, c = tmp_path / "a.zarr", tmp_path / "b.zarr", tmp_path / "c.zarr"
    build_index(src, a, p)
    build_index(src, b, p)
    build_index(src, c, BuildParams(levels=2, target_cluster_items=7, rep_selection="random", seed=7))
    ra, rb, rc = (_open(x, "rep_item_ids")[:] for x in (a, b, c))
    assert len(ra) == 72 and list(ra) == sorted(set(ra.tolist()))
    np.testing.assert_array_equal(ra, rb)
    assert not np.array_equal(ra, rc)
    assert _tree(a, 2) == _tree(b, 2)


@pytest.mark.parametrize(
    ("src_dtype", "stored", "expected_stored"),
    [("float32", "native", "float32"), ("float64", "native", "float32"),
     ("float16", "native", "float16"), ("uint8", "native", "uint8"), ("int8", "native", "int8"),
     ("float32", "float16", "float16"), ("float32", "uint8", "uint8"), ("float32", "int8", "int8"),
     ("uint8", "float32", "float32"), ("int8", "uint8", "uint8")],
)
def test_every_dtype(tmp_path: Path, src_dtype: str, stored: str, expected_stored: str) -> None:
    src = _random_npy(tmp_path, 200, 6, src_dtype)
    raw = np.load(src)
    out = tmp_path / "d.zarr"
    logs: list[str] = []
    res = build_index(src, out, BuildParams(levels=2, target_cluster_items=5, dtype=stored), log=logs.append)
    assert res.stored_dtype == expected_stored
    rep = _open(out, "rep_embeddings")
    assert rep.dtype == np.dtype(expected_stored)
    ids = _open(out, "rep_item_ids")[:]
    expected = raw[ids].astype(np.float32)
    if expected_stored in ("uint8", "int8"):
        info = np.iinfo(expected_stored)
        expected = np.clip(np.trunc(expected), info.min, info.max)
    elif expected_stored == "float16":
        expected = expected.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(rep[:].astype(np.float32), expected)
    if src_dtype == "float64":
        assert any("float64" in line and "float32" in line for line in logs)
    if stored not in ("native", src_dtype) and sizing.is_narrowing(src_dtype, stored):
        assert any("narrowing" in w for w in res.warnings)


def test_narrowing_truncates_and_saturates(tmp_path: Path) -> None:
    data = np.array([[-1.7, 2.9, 300.0, -300.0]], dtype=np.float32).repeat(2, axis=0)
    src = tmp_path / "n.npy"
    np.save(src, data)
    for dtype, expected in (("uint8", [0, 2, 255, 0]), ("int8", [-1, 2, 127, -128])):
        out = tmp_path / f"{dtype}.zarr"
        build_index(src, out, BuildParams(levels=1, target_cluster_items=1, dtype=dtype))
        assert _open(out, "rep_embeddings")[0].tolist() == expected


def test_zarr_array_source(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    g = zarr.open_group(str(store), mode="w")
    g.create_array("emb/vectors", data=TWO_CLUSTERS_POINTS, chunks=(3, 2))
    out = tmp_path / "from_zarr.zarr"
    build_index(f"{store}#emb/vectors", out, TC_PARAMS)
    assert _tree(out, 2)[(1, 1)] == [1, 2, 3]


def test_streaming_path_gives_the_same_index(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 4000, 16)
    a, b = tmp_path / "mem.zarr", tmp_path / "stream.zarr"
    build_index(src, a, BuildParams(levels=2, target_cluster_items=20))
    # a budget of ~40 KiB forces the reread-per-leaf-group path and tiny batches
    build_index(src, b, BuildParams(levels=2, target_cluster_items=20), memory_budget_bytes=40_000)
    assert _files(a) == _files(b)
    for rel in _files(a):
        if not rel.endswith("zarr.json"):
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


# ------------------------------------------------------------------------------- progress, cancel, safety


def test_progress_reports_phases(tmp_path: Path, tc_npy: Path) -> None:
    seen: list[BuildProgress] = []
    build_index(tc_npy, tmp_path / "p.zarr", TC_PARAMS, progress=seen.append)
    phases = [p.phase for p in seen]
    assert phases[0] == "reading" and "level 1" in phases and "level 2" in phases and phases[-1] == "writing"
    assert seen[-1].done == seen[-1].total == 4


@pytest.mark.parametrize("stop_at", ["reading", "level 2", "writing"])
def test_cancel_mid_build_leaves_nothing(tmp_path: Path, stop_at: str) -> None:
    src = _random_npy(tmp_path, 2000, 8)
    out = tmp_path / "out" / "c.zarr"
    out.parent.mkdir()
    cancel = threading.Event()

    def progress(p: BuildProgress) -> None:
        if p.phase == stop_at:
            cancel.set()

    with pytest.raises(BuildCancelled):
        build_index(src, out, BuildParams(levels=2, target_cluster_items=4), progress=progress,
                    cancel=cancel, memory_budget_bytes=20_000)
    assert list(out.parent.iterdir()) == []


def test_existing_output_needs_overwrite_and_is_replaced_atomically(tmp_path: Path, tc_npy: Path) -> None:
    out = tmp_path / "x.zarr"
    build_index(tc_npy, out, TC_PARAMS)
    before = _files(out)
    with pytest.raises(BuildError, match="already exists"):
        build_index(tc_npy, out, TC_PARAMS)
    assert _files(out) == before
    build_index(tc_npy, out, BuildParams(levels=1, target_cluster_items=4), overwrite=True)
    assert int(_open(out, "info/levels")[()]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two_clusters.npy", "x.zarr"]


def test_overwrite_refuses_a_directory_that_is_not_a_store(tmp_path: Path, tc_npy: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.txt").write_text("do not delete")
    with pytest.raises(BuildError, match=r"holds thesis\.txt, which is not part of an ecpfs index; not replaced"):
        build_index(tc_npy, out, TC_PARAMS, overwrite=True)
    assert (out / "thesis.txt").exists()


def test_failed_build_leaves_nothing(tmp_path: Path) -> None:
    data = np.ones((50, 3), dtype=np.float32)
    data[37, 1] = np.nan
    src = tmp_path / "nan.npy"
    np.save(src, data)
    with pytest.raises(BuildError, match="row 37 contains NaN"):
        build_index(src, tmp_path / "o.zarr", BuildParams(levels=1, target_cluster_items=5))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan.npy"]


# ------------------------------------------------------------------------------- preview


def test_preview_reads_only_the_header(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 2000, 32)
    pv = preview_build(src, BuildParams(levels=3, target_cluster_items=10))
    assert pv.ok and pv.rows == 2000 and pv.dim == 32 and pv.source_dtype == "float32"
    assert pv.representatives == 200 and pv.fan_out == 6
    assert pv.max_nodes_per_level == [6, 36, 200]
    assert pv.node_chunk_rows == 4096 and pv.rep_chunk_rows == 65536
    assert pv.estimated_bytes > 2000 * 32 * 4


def test_preview_warnings(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 100, 4)
    pv = preview_build(src, BuildParams(levels=5, target_cluster_items=10, is_normalized=True))
    text = " | ".join(pv.warnings)
    assert "fan-out is 2" in text
    assert "all depth and no breadth" in text
    assert "not unit length" in text


def test_preview_errors(tmp_path: Path) -> None:
    src = _random_npy(tmp_path, 100, 4)
    pv = preview_build(src, BuildParams(levels=0, target_cluster_items=101, dtype="bf16",
                                        node_chunk_bytes=8))
    text = " | ".join(p.message for p in pv.problems)
    assert "levels must be at least 1" in text
    assert "larger than the number of rows (100)" in text
    assert "dtype must be one of" in text
    assert not pv.ok
    pv = preview_build(src, BuildParams(node_chunk_bytes=8, target_cluster_items=10))
    assert any("node chunk budget too small" in p.message for p in pv.problems)
    pv = preview_build(tmp_path / "missing.npy", BuildParams())
    assert pv.problems == [BuildProblem("input", "file not found", str(tmp_path / "missing.npy"))]


def test_problems_name_their_field(tmp_path: Path) -> None:
    """Every check reports which setting it is about, so a form can put it beside that field."""
    src = _random_npy(tmp_path, 100, 4)
    (tmp_path / "taken.zarr").mkdir()
    bad = BuildParams(levels=0, target_cluster_items=0, metric="cosine", dtype="bf16", rep_selection="every",
                      node_chunk_bytes=0, rep_chunk_bytes=-1)
    info, problems = check_build(src, bad, tmp_path / "taken.zarr")
    assert info is not None and info.rows == 100
    assert [p.field for p in problems] == ["levels", "target", "metric", "rep_selection", "dtype", "node_chunk",
                                           "rep_chunk", "output"]
    assert problems[0] == BuildProblem("levels", "levels must be at least 1 (got 0)")
    assert problems[-1] == BuildProblem("output", "already exists: choose a new name, or replace it",
                                        str(tmp_path / "taken.zarr"))
    assert str(problems[-1]) == f"{tmp_path / 'taken.zarr'}: already exists: choose a new name, or replace it"
    assert check_build(src, BuildParams(target_cluster_items=10), tmp_path / "new.zarr") == (info, [])

    _, problems = check_build("", BuildParams(), "")
    assert problems == [BuildProblem("input", "choose a .npy file of vectors"),
                        BuildProblem("output", "choose where to write the index")]
    _, problems = check_build(src, BuildParams(target_cluster_items=10), tmp_path / "no" / "x.zarr")
    assert problems == [BuildProblem("output", f"output folder {tmp_path / 'no'} does not exist")]


def test_build_raises_every_problem_of_the_check(tmp_path: Path) -> None:
    """build_index refuses with the same problems check_build finds, all at once, and writes nothing."""
    src = _random_npy(tmp_path, 100, 4)
    (tmp_path / "taken.zarr").mkdir()
    params = BuildParams(levels=0, target_cluster_items=10)
    with pytest.raises(BuildError) as raised:
        build_index(src, tmp_path / "taken.zarr", params)
    assert list(raised.value.problems) == check_build(src, params, tmp_path / "taken.zarr")[1]
    assert [p.field for p in raised.value.problems] == ["levels", "output"]
    assert str(raised.value) == "; ".join(str(p) for p in raised.value.problems)
    assert list((tmp_path / "taken.zarr").iterdir()) == []


def test_float16_overflow_is_reported(tmp_path: Path) -> None:
    data = np.ones((6, 2), np.float32)
    data[4, 1] = 70000.0
    src = tmp_path / "big.npy"
    np.save(src, data)
    with pytest.raises(BuildError, match=r"narrowed to float16.*row 4 contains infinity"):
        build_index(src, tmp_path / "o.zarr", BuildParams(levels=1, target_cluster_items=2, dtype="float16"))
    assert not (tmp_path / "o.zarr").exists()
