"""`add_rows` does what upstream's insert does (format document §3.8): every added row lands in the
leaf that an independent routing written here (plain numpy on what zarr-python reads, §3.6 with the
last-maximum tie rule) sends it to, appended after the leaf's rows with the next ids; a missing leaf
is created like the build creates one, a missing internal node stops the add before anything is
written; an interrupt after the reservation leaves upstream's gap; only a leaf's last chunk is
rewritten; zarr-python and the app read the result alike."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build import insert
from ecpfs_viewer.model.build.builder import BuildParams, BuildProgress, build_index
from ecpfs_viewer.model.build.errors import BuildError
from ecpfs_viewer.model.build.insert import AddCancelled, AddInterrupted, add_rows
from ecpfs_viewer.model.build.write_lock import IndexLocked
from ecpfs_viewer.model.ecpfs import summarize
from ecpfs_viewer.model.search import IndexReader
from tests.index_factory import hierarchy

DIM = 6
T = 20  # target cluster items: representatives are rows 0, 20, 40, ...


# -- an independent routing: plain numpy on what zarr-python reads (§3.6) ---------------------------
def _best_row(a: np.ndarray, x: np.ndarray, dot: bool) -> int:
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    scores = a64 @ x64 if dot else -((a64 * a64).sum(axis=1) - 2 * (a64 @ x64) + x64 @ x64)
    return len(scores) - 1 - int(np.argmax(scores[::-1]))  # the last maximum wins


def _independent_leaf(g: zarr.Group, x: np.ndarray) -> int:
    levels = int(g["info/levels"][()])
    dot = str(g["info/metric"][()]) == "IP" or bool(g["info/is_normalized"][()])
    node = _best_row(g["index_root/embeddings"][:], x, dot)
    for level in range(1, levels):
        n = g[f"lvl_{level}/node_{node}"]
        node = int(n["node_ids"][:][_best_row(n["embeddings"][:], x, dot)])
    return node


def _data(dtype: str, rows: int, seed: int, metric: str = "L2") -> np.ndarray:
    """Clustered rows; for IP rows of one norm (unit, or permutations of one uint8 vector), so that every
    representative is its own best match and a build of more than one level can succeed (§3.5)."""
    rng = np.random.default_rng(seed)
    if metric == "IP" and dtype == "uint8":
        base = np.array([0, 40, 80, 120, 160, 200], dtype=np.uint8)
        return np.stack([rng.permutation(base) for _ in range(rows)])
    centres = rng.standard_normal((8, DIM)) * 4
    x = centres[rng.integers(0, 8, rows)] + rng.standard_normal((rows, DIM))
    if metric == "IP":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    if dtype == "uint8":
        return np.clip(np.rint(x * 8 + 128), 0, 255).astype(np.uint8)
    return x.astype(np.float32)


def _build(tmp: Path, dtype: str, metric: str, levels: int, rows: int = 600, **extra: int) -> tuple[Path, np.ndarray]:
    data = _data(dtype, rows, 1, metric)
    data[T] = data[0]  # representatives 0 and 1 are equal: root rows 0 and 1 tie
    np.save(tmp / "data.npy", data)
    build_index(tmp / "data.npy", tmp / "idx", BuildParams(levels=levels, target_cluster_items=T, metric=metric,
                                                           **extra))  # type: ignore[arg-type]
    return tmp / "idx", data


def _leaf_ids(g: zarr.Group, levels: int) -> dict[int, np.ndarray]:
    level = g[f"lvl_{levels}"]
    return {int(name[5:]): level[name]["item_ids"][:] for name in level.group_keys()}


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("metric", ["L2", "IP"])
@pytest.mark.parametrize("levels", [1, 3])
def test_rows_land_where_the_independent_routing_sends_them(tmp_path: Path, dtype: str, metric: str,
                                                            levels: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(insert, "ROUTE_BATCH_BYTES", 8 * DIM * 7)  # routed 7 rows at a time: batches change nothing
    index, data = _build(tmp_path, dtype, metric, levels)
    new = _data(dtype, 150, 2, metric)
    new[:5] = data[0]  # exact ties at the root and below: the last equal row wins
    g = zarr.open_group(index, mode="r")
    before = _leaf_ids(g, levels)
    expected = [_independent_leaf(g, row) for row in new]
    if levels == 1:  # the tie is real: root rows 0 and 1 are equal, the later one is taken
        assert expected[0] == 1

    result = add_rows(index, new)

    assert (result.ids.start, result.ids.stop) == (600, 750)
    g = zarr.open_group(index, mode="r")
    assert int(g["info/next_item_id"][()]) == int(g["info/total_items"][()]) == 750
    after = _leaf_ids(g, levels)
    for leaf, ids in after.items():
        old = before.get(leaf, np.empty(0, np.uint32))
        assert np.array_equal(ids[:len(old)], old)  # appended after the rows it had, in id order
        added = ids[len(old):] - 600
        assert np.array_equal(added, np.flatnonzero(np.array(expected) == leaf))
        emb = g[f"lvl_{levels}/node_{leaf}/embeddings"][:]
        assert emb.dtype == np.dtype(dtype)
        assert np.array_equal(emb[len(old):], new[added])
    assert sorted(np.concatenate(list(after.values())).tolist()) == list(range(750))
    # the app reads what zarr-python reads
    reader = IndexReader(index)
    for leaf, ids in after.items():
        node = reader.node(levels, leaf)
        assert node is not None and np.array_equal(node.ids, ids)
        assert np.array_equal(node.vectors, g[f"lvl_{levels}/node_{leaf}/embeddings"][:].astype(np.float32))


def test_float_rows_into_a_uint8_index_are_narrowed_as_a_build_narrows(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "uint8", "L2", 2)
    rows = np.array([[300.7, -5.0, 17.9, 0.2, 128.5, 255.99]], dtype=np.float32)
    result = add_rows(index, rows)
    reader = IndexReader(index)
    vector = reader.vector_for_item(result.ids.start)
    assert vector.tolist() == [255, 0, 17, 0, 128, 255]  # truncated toward zero, saturated
    assert any("lossy" in w for w in result.warnings)


def test_a_missing_leaf_is_created_like_the_builds_and_a_missing_internal_node_stops_the_add(
        tmp_path: Path) -> None:
    index, data = _build(tmp_path, "float32", "L2", 3)
    g = zarr.open_group(index, mode="r")
    rep = 7  # representative row 7 = item 140 leads to lvl_3/node_7
    assert _independent_leaf(g, data[rep * T]) == rep
    shutil.rmtree(index / "lvl_3" / f"node_{rep}")
    result = add_rows(index, data[rep * T][None, :])
    assert result.leaves_created == [rep]
    made = zarr.open_group(index, mode="r")[f"lvl_3/node_{rep}"]
    root = zarr.open_array(index, path="index_root/embeddings", mode="r")
    assert made["embeddings"].chunks == root.chunks and made["item_ids"].chunks == (root.chunks[0],)
    assert made["item_ids"].dtype == np.uint32 and made["item_ids"][:].tolist() == [600]
    assert made["border"].shape == (2,)
    assert (index / "lvl_3" / f"node_{rep}" / "zarr.json").exists()

    # now an internal node on the route is gone: the add names it and writes nothing
    node = _independent_path(zarr.open_group(index, mode="r"), data[3 * T])[1]
    shutil.rmtree(index / "lvl_2" / f"node_{node}")
    files = _snapshot(index)
    with pytest.raises(BuildError, match=f"lvl_2/node_{node}"):
        add_rows(index, data[3 * T][None, :])
    assert _snapshot(index) == files


def test_ip_a_route_into_an_internal_node_the_build_never_made_stops_the_add_naming_it(tmp_path: Path) -> None:
    """IP scores: root row 0 = (0.1, 0) is nearest to no representative, not even itself, so the build makes
    no lvl_1/node_0 (every row goes through node 1 and the build succeeds); a row nearest to root row 0
    reaches that missing internal node, which stops upstream's insert (§3.8), and so the add, before ids
    are reserved."""
    rows = np.array([(0.1, 0), (0, 1), (1, 1), (0.5, 1), (0.2, 2), (0, 3), (1, 2), (0.3, 1)], dtype=np.float32)
    np.save(tmp_path / "rows.npy", rows)
    index = tmp_path / "ip.zarr"
    build_index(tmp_path / "rows.npy", index, BuildParams(levels=2, target_cluster_items=2, metric="IP"))
    assert sorted(p.name for p in (index / "lvl_1").iterdir() if p.is_dir()) == ["node_1"]
    files = _snapshot(index)
    with pytest.raises(BuildError, match=r"internal node lvl_1/node_0, which is not stored; upstream's insert fails"):
        add_rows(index, np.array([[1, -10]], dtype=np.float32))
    assert _snapshot(index) == files
    result = add_rows(index, np.array([[1, 10]], dtype=np.float32))  # through lvl_1/node_1: added
    assert str(result.ids) == "8..8" and summarize(hierarchy(index)).total_items == 9


def _independent_path(g: zarr.Group, x: np.ndarray) -> list[int]:
    dot = str(g["info/metric"][()]) == "IP"
    path = [_best_row(g["index_root/embeddings"][:], x, dot)]
    for level in range(1, int(g["info/levels"][()])):
        n = g[f"lvl_{level}/node_{path[-1]}"]
        path.append(int(n["node_ids"][:][_best_row(n["embeddings"][:], x, dot)]))
    return path


def _snapshot(index: Path) -> dict[str, tuple[int, int, bytes]]:
    out = {}
    for folder, _, files in os.walk(index):
        for name in files:
            p = os.path.join(folder, name)
            st = os.stat(p)
            out[os.path.relpath(p, index)] = (st.st_ino, st.st_mtime_ns, Path(p).read_bytes())
    return out


def test_only_the_last_chunk_of_a_leaf_is_rewritten(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 1, node_chunk_bytes=4 * DIM * 4)  # 4 rows a chunk
    before = _snapshot(index)
    g = zarr.open_group(index, mode="r")
    sizes = {leaf: len(ids) for leaf, ids in _leaf_ids(g, 1).items()}
    new = _data("float32", 120, 3)
    add_rows(index, new)
    after = _snapshot(index)
    touched = set()
    for key, (ino, mtime, content) in before.items():
        parts = key.split(os.sep)
        if parts[0] != "lvl_1" or parts[2:4] not in (["embeddings", "c"], ["item_ids", "c"]):
            continue
        leaf, chunk = int(parts[1][5:]), int(parts[4])
        last = (sizes[leaf] - 1) // 4
        if chunk < last or sizes[leaf] % 4 == 0:
            assert after[key] == (ino, mtime, content), key  # a full chunk before the end: untouched
        elif after[key] != (ino, mtime, content):
            touched.add(leaf)
    assert touched  # the partial last chunks of the leaves that grew were rewritten
    g = zarr.open_group(index, mode="r")
    for leaf, ids in _leaf_ids(g, 1).items():
        if len(ids) == sizes[leaf]:  # a leaf that got nothing: not a byte changed
            for key in before:
                if key.startswith(f"lvl_1{os.sep}node_{leaf}{os.sep}"):
                    assert after[key] == before[key]


def test_an_interrupt_after_the_reservation_leaves_upstreams_gap(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 2)
    leaves_before = {k: v for k, v in _snapshot(index).items() if k.startswith("lvl_")}

    def ctrl_c_after_reserving(p: BuildProgress) -> None:
        if p.phase == "reserved":
            raise KeyboardInterrupt

    with pytest.raises(AddInterrupted, match="gap of 40 ids") as caught:
        add_rows(index, _data("float32", 40, 4), progress=ctrl_c_after_reserving)
    assert (caught.value.ids.start, caught.value.ids.stop) == (600, 640)
    summary = summarize(hierarchy(index))
    assert (summary.total_items, summary.next_item_id, summary.gap) == (600, 640, 40)
    assert {k: v for k, v in _snapshot(index).items() if k.startswith("lvl_")} == leaves_before
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", "info", str(index)], capture_output=True,
                          text=True, check=False)
    assert "40 item ids reserved but never written" in done.stdout
    # the reserved ids are never reused: the next add starts after them
    result = add_rows(index, _data("float32", 10, 5))
    assert (result.ids.start, result.ids.stop) == (640, 650)
    summary = summarize(hierarchy(index))
    assert (summary.total_items, summary.next_item_id) == (610, 650)


def test_cancel_before_the_reservation_leaves_the_index_untouched(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 2)
    files = _snapshot(index)
    cancel = threading.Event()

    def cancel_while_routing(p: BuildProgress) -> None:
        if p.phase == "routing":
            cancel.set()

    with pytest.raises(AddCancelled):
        add_rows(index, _data("float32", 40, 4), progress=cancel_while_routing, cancel=cancel)
    assert _snapshot(index) == files


_HOLDER = textwrap.dedent("""
    import sys
    from ecpfs_viewer.model.build.write_lock import index_write_lock
    with index_write_lock(sys.argv[1]):
        print("locked", flush=True)
        sys.stdin.readline()
""")


def test_the_lock_refuses_a_second_writer_and_says_upstream_is_not_covered(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 2)
    files = _snapshot(index)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(index)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexLocked, match=r"another ecpfs-viewer writer.*upstream"):
            add_rows(index, _data("float32", 5, 4), lock_wait_seconds=0)
        with pytest.raises(IndexLocked, match=r"after waiting 0\.2 s"):
            add_rows(index, _data("float32", 5, 4), lock_wait_seconds=0.2)
        assert _snapshot(index) == files
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    assert add_rows(index, _data("float32", 5, 4)).ids.start == 600  # free again


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[:, :4], "dimension 4, the index has 6"),
    (lambda rows: np.where(np.arange(6) == 2, np.nan, rows).astype(np.float32), "row 0 contains NaN"),
])
def test_rows_are_checked_like_a_builds_input(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    index, _ = _build(tmp_path, "float32", "L2", 2)
    files = _snapshot(index)
    with pytest.raises(BuildError, match=message):
        add_rows(index, change(_data("float32", 5, 4)))
    assert _snapshot(index) == files


def test_unit_length_is_checked_against_is_normalized(tmp_path: Path) -> None:
    data = _data("float32", 400, 1)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    np.save(tmp_path / "data.npy", data)
    build_index(tmp_path / "data.npy", tmp_path / "idx", BuildParams(levels=2, target_cluster_items=T,
                                                                    is_normalized=True))
    with pytest.raises(BuildError, match=r"rows are not"):
        add_rows(tmp_path / "idx", _data("float32", 5, 4))
    rows = _data("float32", 5, 4)
    result = add_rows(tmp_path / "idx", rows / np.linalg.norm(rows, axis=1, keepdims=True))
    assert len(result.ids) == 5
    assert len(add_rows(tmp_path / "idx", rows, force=True).ids) == 5


def test_only_local_folders_are_written(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 2)
    shutil.make_archive(str(tmp_path / "idx"), "zip", index)
    for target in (f"http://127.0.0.1:9/{index.name}", str(tmp_path / "idx.zip"), str(tmp_path / "nothing")):
        with pytest.raises(BuildError, match=r"local index folders only|index folder only|no such index folder"):
            add_rows(target, _data("float32", 5, 4))


def test_the_item_cache_does_not_answer_stale_after_an_add(tmp_path: Path) -> None:
    index, _ = _build(tmp_path, "float32", "L2", 2)
    reader = IndexReader(index)
    with pytest.raises(Exception, match="not"):
        reader.locate(600)  # the whole item map is made and kept in the cache folder
    reader.keep_item_map()
    new = _data("float32", 30, 6)
    add_rows(index, new)
    expected = _independent_leaf(zarr.open_group(index, mode="r"), new[0])
    fresh = IndexReader(index)
    assert fresh.locate(600).leaf == expected
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", "locate", str(index), "629"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _docs(index: Path, level: int) -> dict[str, bytes]:
    return {str(p.relative_to(index)): p.read_bytes() for p in (index / f"lvl_{level}").rglob("zarr.json")}


def test_grown_and_new_leaves_are_documented_as_the_build_documents_its_leaves(tmp_path: Path) -> None:
    """Same arrays, dtypes, chunk shapes, codecs, attributes and formatting: only the row count changes
    in a grown leaf's documents, and a created leaf's documents are a built leaf's with its own count."""
    index, data = _build(tmp_path, "float32", "L2", 2)
    rep = 9
    template = {name: json.loads((index / "lvl_2" / f"node_{rep}" / name / "zarr.json").read_bytes())
                for name in ("embeddings", "item_ids", "border")}
    group = (index / "lvl_2" / f"node_{rep}" / "zarr.json").read_bytes()
    shutil.rmtree(index / "lvl_2" / f"node_{rep}")
    before = _docs(index, 2)
    new = np.concatenate([data[rep * T][None, :], _data("float32", 60, 7)])
    result = add_rows(index, new)
    assert result.leaves_created == [rep]
    after = _docs(index, 2)
    grown = 0
    for key, raw in before.items():
        old, now = json.loads(raw), json.loads(after[key])
        if old != now:
            grown += 1
            assert now["shape"][0] > old["shape"][0]
            now["shape"] = old["shape"]
            assert now == old, key
            assert after[key] == json.dumps(json.loads(after[key]), indent=2).encode()  # formatted alike
    assert grown >= 2
    made = index / "lvl_2" / f"node_{rep}"
    assert (made / "zarr.json").read_bytes() == group
    for name, doc in template.items():
        now = json.loads((made / name / "zarr.json").read_bytes())
        if name != "border":
            assert now["shape"][0] == zarr.open_array(made / "item_ids", mode="r").shape[0] >= 1
            now["shape"] = doc["shape"]
        assert now == doc, name
