"""Read-model figures on the benchmark index, printed next to zarr-python doing the same job.

Index: 200,000 x 64 float32, levels 3, target_cluster_items 50 (16 / 256 / 4,000 nodes), built
once by benchmarks/_bench_index.py. Every timing uses a freshly opened store and a fresh Hierarchy
(no cache hits) and reports the median of several runs. Figures only; nothing passes or fails.

    .venv-newest/bin/python benchmarks/bench_read.py [--repeat N] [--skip-slow]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import zarr
from _bench_index import bench_index_path

from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.chunks import chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import default_selection, read_subset

NODE = "lvl_3/node_1000/embeddings"


def many_chunks_array() -> Path:
    """A 1-D uint8 array of 10,000 written chunks (cached), where nchunks_initialized is quadratic."""
    path = bench_index_path().parent / "many_chunks_10k.zarr"
    if not (path / "zarr.json").is_file():
        array = zarr.create_array(path, shape=(10_000 * 4,), chunks=(4,), dtype="uint8", fill_value=0,
                                  overwrite=True)
        array[...] = 1
    return path


def median_ms(job: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = job()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), result


def row(label: str, ours: float, target: str, baseline_label: str, baseline: float | None) -> None:
    base = f"{baseline:10.1f} ms" if baseline is not None else "   (skipped)"
    print(f"{label:<44} {ours:9.2f} ms   target {target:<8} | {baseline_label:<44} {base}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="runs per timing (median reported)")
    parser.add_argument("--skip-slow", action="store_true", help="skip zarr-python members(max_depth=None)")
    args = parser.parse_args()
    index = bench_index_path()
    warnings.simplefilter("ignore")
    print(f"index: {index}\nzarr {zarr.__version__}, Python {sys.version.split()[0]}, median of {args.repeat}\n")

    def list_ours() -> list[tuple[str, str]]:
        h = open_index(index).hierarchy
        return [(n.name, n.kind.value) for n in h.children("lvl_3")]

    ours, listed = median_ms(list_ours, args.repeat)
    assert len(listed) == 4000, len(listed)

    def list_zarr() -> list[str]:
        group = zarr.open_group(index, mode="r", path="lvl_3")
        return list(group.group_keys())

    base, keys = median_ms(list_zarr, max(1, min(3, args.repeat)))
    assert len(keys) == 4000
    row("list lvl_3 (4,000 nodes, names + kinds)", ours, "<= 50 ms", "zarr group_keys()", base)

    def stats_ours() -> object:
        h = open_index(index).hierarchy
        return chunk_stats(h, NODE, node_array=True)

    ours, stats = median_ms(stats_ours, args.repeat * 3)

    def stats_zarr() -> tuple[int, int]:
        array = zarr.open_array(index, path=NODE, mode="r")
        return array.nchunks_initialized, array.nbytes_stored()

    base, _ = median_ms(stats_zarr, args.repeat * 3)
    row(f"chunk stats of {NODE}", ours, "<= 20 ms", "zarr nchunks_initialized + nbytes_stored()", base)
    print(f"    {stats.describe()}; {stats.underfill.describe() if stats.underfill else ''}")

    many = many_chunks_array()
    ours, stats = median_ms(lambda: chunk_stats(Hierarchy(open_store(many)), ""), args.repeat)
    base, _ = median_ms(lambda: zarr.open_array(many, mode="r").nchunks_initialized, 1)
    row(f"chunk stats, {stats.n_chunks:,}-chunk array", ours, "-", "zarr nchunks_initialized (quadratic)", base)

    def subset_ours() -> object:
        h = open_index(index).hierarchy
        return read_subset(h, NODE, default_selection(h.details(NODE).array))

    ours, subset = median_ms(subset_ours, args.repeat * 3)
    base, _ = median_ms(lambda: zarr.open_array(index, path=NODE, mode="r")[...], args.repeat * 3)
    row(f"read default selection of the node {subset.data.shape}", ours, "-", "zarr open_array()[...]", base)

    def walk_ours() -> int:
        h = open_index(index).hierarchy
        count, stack = 0, [""]
        while stack:
            for node in h.children(stack.pop()):
                count += 1
                if node.kind.is_container:
                    stack.append(node.path)
        return count

    ours, count = median_ms(walk_ours, max(1, args.repeat // 2))
    if args.skip_slow:
        base = None
    else:
        base, _members = median_ms(lambda: len(list(zarr.open_group(index, mode="r").members(max_depth=None))), 1)
    row(f"walk the whole index ({count:,} nodes)", ours, "-", "zarr members(max_depth=None)", base)


if __name__ == "__main__":
    main()
