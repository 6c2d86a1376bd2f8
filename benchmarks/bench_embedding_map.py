"""Embedding map benchmark (issue 39): time to the first picture, per-frame aggregation, peak memory,
beside one pyqtgraph ScatterPlotItem of every point. Figures, not pass/fail.

    .venv-newest/bin/python benchmarks/bench_embedding_map.py [--sizes 200k,2m,10m] [--frames 20]

Sizes: the 200,000-item benchmark index (built on first use, benchmarks/_bench_index.py) and, when
they already exist in ECPFS_BENCH_CACHE, the 2M and 10M ones (never built here). Each figure comes
from a fresh process (its own peak RSS, VmHWM) with a private cache folder:

- cold: open, the tree above the leaves and the PCA's sample of leaves drawn as the first picture
  (density index, colouring, frame), the pictures on the way (each held, as the window shows it,
  until the next is drawn), then every item placed (and kept in the cache) and its full frame
  (model/diagnostics/embedding_map/progressive.py);
- warm: a second process: the placement from the cache and its first frame (the second opening);
- frames: the median and worst time to aggregate a 1200 x 800 frame at zooms 1 to 256 and make its
  picture (the window's frame worker; the image moves with the view meanwhile);
- GUI thread: for the same views, the median and worst time the window's GUI thread spends on a frame
  handed over (the image set, the points drawn when few are in view) and its repaint;
- memory: the process's peak RSS, and beyond the window's own before the map is asked for (Qt,
  pyqtgraph and the map's view imported, the application made, the index opened): what the map adds,
  with the peak after the placement, after its picture, after the frames and after the GUI thread's;
- t-SNE (--tsne): the t-SNE placement made cold in a fresh process (model level, no window): its
  first picture (the PCA stand-in), the first picture laid out (the first picture before the stand-in
  existed) and every item placed (placements.py; the layout extra);
- synthetic (--synthetic N): frames alone on a clustered 2-D placement of N items, no index read;
- baseline: one pyqtgraph ScatterPlotItem holding every point, set and rendered offscreen once
  (or the size at which it gave up: past --baseline-seconds or out of memory);
- floor: every file of the index read whole, 64 at a time, cold (page cache dropped) and warm: what
  a cold placement cannot beat (benchmarks/_floors.py).
Targets (issue 39): 200k all within 1 s; 10M first picture within 5 s, <= 50 ms a frame on the GUI thread,
<= 600 MB more.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import CACHE, ROWS, bench_index_path
from _floors import eviction_name, floor_of

WIDTH, HEIGHT = 1200, 800
SIZES = {"200k": 200_000, "2m": 2_000_000, "10m": 10_000_000}


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident MB of this process."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return found["VmRSS"], found["VmHWM"]


def _window_loaded() -> None:
    """What the window has loaded before the map is asked for: Qt, pyqtgraph, the map's view, the application."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg

    import ecpfs_viewer.gui.diagnostics.embedding_view  # noqa: F401

    pg.mkQApp()


def child_map(index: str, frames: int) -> dict[str, float | int | str]:
    """One opening of the map in this process (cold or warm, by the cache folder it was given), the
    way the window makes it: progressive_placement, each picture's density index, colours and frame,
    each picture held until the next is drawn (the window shows it meanwhile)."""
    import numpy as np

    from ecpfs_viewer.model.diagnostics.embedding_map import DensityIndex, by_level, colour_sums, density_frame
    from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture, progressive_placement
    from ecpfs_viewer.model.search import IndexReader

    out: dict[str, float | int | str] = {}
    _window_loaded()
    t0 = time.perf_counter()
    reader = IndexReader(index)
    base = out["base_rss_mb"] = _rss_mb()[0]
    pictures: list[float] = []
    shown_now: list[object] = []  # the picture on screen: the window holds it until the next is drawn

    def picture(shown: MapPicture):  # type: ignore[no-untyped-def]
        density = DensityIndex(shown.placement)
        sums = colour_sums(density, by_level(shown.index_map, 1))
        density_frame(density, sums, density.bounds, WIDTH, HEIGHT).rgba()
        pictures.append(time.perf_counter() - t0)
        shown_now[:] = [shown, density, sums]
        return density, sums

    done = progressive_placement(reader, on_picture=picture)
    out["placed_peak_mb"] = _rss_mb()[1] - base
    density, sums = picture(done)
    shown_now.clear()
    out["drawn_peak_mb"] = _rss_mb()[1] - base
    placement = done.placement
    out["from_cache"] = int(placement.from_cache)
    out["first_picture_s"] = pictures[0]
    out["pictures"] = len(pictures)
    out["full_picture_s"] = pictures[-1]
    out["items"] = placement.count
    rng = np.random.default_rng(1)
    times = []
    views = []
    for i in range(frames):
        zoom = 2.0 ** (i % 9)
        centre = placement.coords[int(rng.integers(0, placement.count))]
        view = density.bounds.zoomed(zoom, float(centre[0]), float(centre[1]))
        views.append(view)
        t = time.perf_counter()
        density_frame(density, sums, view, WIDTH, HEIGHT).rgba()
        times.append(time.perf_counter() - t)
    out["frame_median_ms"] = statistics.median(times) * 1e3
    out["frame_worst_ms"] = max(times) * 1e3
    out["frames_peak_mb"] = _rss_mb()[1] - base
    out.update(_gui_thread(density, sums, by_level(done.index_map, 1).leaf_rgb(), views))
    out["density_mb"] = density.nbytes / 2**20
    out["peak_rss_mb"] = _rss_mb()[1]
    return out


def child_synthetic(items: int, frames: int) -> dict[str, float | int | str]:
    """Frames alone on a synthetic placement (clustered 2-D points, 50 items a leaf; no index read):
    what a pan or zoom costs at a size whose index is not at hand."""
    import numpy as np

    from ecpfs_viewer.model.diagnostics.embedding_map import (
        DensityIndex,
        ItemColours,
        MapProjection,
        Placement,
        colour_sums,
        density_frame,
    )

    rng = np.random.default_rng(2)
    leaves = max(items // 50, 1)
    centres = rng.normal(0, 10, (512, 2))
    leaf_centre = centres[rng.integers(0, 512, leaves)] + rng.normal(0, 1, (leaves, 2))
    starts = np.linspace(0, items, leaves + 1).astype(np.int64)
    counts = np.diff(starts)
    coords = (np.repeat(leaf_centre, counts, axis=0) + rng.normal(0, 0.3, (items, 2))).astype(np.float32)
    projection = MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), items, 0)
    placement = Placement(projection, np.arange(leaves, dtype=np.int64), starts, coords,
                          np.arange(items, dtype=np.int64))
    base = _rss_mb()[0]
    colours = ItemColours("level1", "synthetic", "a random category per leaf", "categorical",
                          leaf_codes=rng.integers(0, 40, leaves).astype(np.int32),
                          names=tuple(f"c{i}" for i in range(40)))
    t = time.perf_counter()
    density = DensityIndex(placement)
    index_s = time.perf_counter() - t
    t = time.perf_counter()
    sums = colour_sums(density, colours)
    sums_s = time.perf_counter() - t
    times = []
    views = []
    for i in range(frames):
        centre = coords[int(rng.integers(0, items))]
        view = density.bounds.zoomed(2.0 ** (i % 9), float(centre[0]), float(centre[1]))
        views.append(view)
        t = time.perf_counter()
        density_frame(density, sums, view, WIDTH, HEIGHT).rgba()
        times.append(time.perf_counter() - t)
    added = _rss_mb()[1] - base
    return {"items": items, "index_s": index_s, "sums_s": sums_s, "frame_median_ms": statistics.median(times) * 1e3,
            "frame_worst_ms": max(times) * 1e3, "added_mb": added, "density_mb": density.nbytes / 2**20,
            **_gui_thread(density, sums, colours.leaf_rgb(), views)}


def _gui_thread(density, sums, leaf_rgb, views) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The window's map view (offscreen) handed each view's frame as its frame worker hands it over:
    the median and worst GUI-thread time to show it (image, points) and repaint."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg

    from ecpfs_viewer.gui.diagnostics.embedding_view import EmbeddingMapView, _frame_job

    app = pg.mkQApp()
    view = EmbeddingMapView()
    view.resize(WIDTH, HEIGHT)
    view.show()
    view.show_index(density, sums, leaf_rgb)
    app.processEvents()
    times = []
    for rect in views:
        handed = _frame_job(density, sums, rect, WIDTH, HEIGHT, (255, 255, 255))
        t = time.perf_counter()
        view._show_frame(handed)
        view.repaint()
        times.append(time.perf_counter() - t)
    view._runner.invalidate()
    return {"gui_median_ms": statistics.median(times) * 1e3, "gui_worst_ms": max(times) * 1e3}


def child_scatter(index: str, limit_s: float) -> dict[str, float | int | str]:
    """The baseline: every point in one pyqtgraph ScatterPlotItem, set and rendered once (offscreen)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg

    from ecpfs_viewer.model.diagnostics.embedding_map import by_level
    from ecpfs_viewer.model.diagnostics.embedding_map.progressive import progressive_placement
    from ecpfs_viewer.model.search import IndexReader

    reader = IndexReader(index)
    placed = progressive_placement(reader)
    index_map, placement = placed.index_map, placed.placement
    assert placement.from_cache, "run the cold map first: the baseline draws the cached placement"
    base = _rss_mb()[0]
    app = pg.mkQApp()
    brushes = [pg.mkBrush(*c) for c in by_level(index_map, 1).leaf_rgb().tolist()]
    leaf_pos = placement.leaf_pos
    t = time.perf_counter()
    widget = pg.PlotWidget()
    widget.resize(WIDTH, HEIGHT)
    item = pg.ScatterPlotItem(pen=None, size=2)
    item.setData(x=placement.coords[:, 0], y=placement.coords[:, 1], brush=[brushes[p] for p in leaf_pos])
    widget.addItem(item)
    widget.show()
    widget.grab()
    app.processEvents()
    return {"items": placement.count, "scatter_s": time.perf_counter() - t, "scatter_added_mb": _rss_mb()[1] - base,
            "limit_s": limit_s}


def child_tsne(index: str) -> dict[str, float | int | str]:
    from ecpfs_viewer.model.diagnostics.embedding_map.placements import placed_map
    from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture
    from ecpfs_viewer.model.search import IndexReader

    started = time.perf_counter()
    stand_in: list[float] = []
    laid_out: list[float] = []

    def picture(shown: MapPicture) -> None:
        (stand_in if shown.stand_in else laid_out).append(time.perf_counter() - started)

    done = placed_map(IndexReader(index), "tsne", on_picture=picture)
    return {"stand_in_s": stand_in[0] if stand_in else -1.0, "laid_out_s": laid_out[0] if laid_out else -1.0,
            "all_s": time.perf_counter() - started, "items": done.placement.count,
            "anchor": f"lvl_{done.placement.projection.anchor_level}"}  # type: ignore[attr-defined]


def run_child(args: list[str], cache: Path, timeout: float) -> dict[str, float | int | str]:
    env = {**os.environ, "ECPFS_VIEWER_CACHE": str(cache), "QT_QPA_PLATFORM": "offscreen"}
    try:
        done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"gave_up": f"past {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"gave_up": f"exit {done.returncode}: {last}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def index_of(size: str) -> Path | None:
    rows = SIZES[size]
    if rows == ROWS:
        return bench_index_path(rows=rows)
    name = f"bench_{rows // 1_000_000}m_64_l3_t50.zarr"
    found = CACHE / name
    return found if found.is_dir() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200k,2m,10m", help="which indexes (default 200k,2m,10m when present)")
    parser.add_argument("--frames", type=int, default=20, help="frames timed per size (default 20)")
    parser.add_argument("--baseline-seconds", type=float, default=120.0, help="when the scatter baseline gives up")
    parser.add_argument("--synthetic", default="", metavar="N,N",
                        help="also time frames alone on synthetic placements of N items (e.g. 10000000)")
    parser.add_argument("--tsne", action="store_true", help="also time the t-SNE placement's pictures (layout extra)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        from ecpfs_viewer import process_memory

        process_memory.limit_allocator_arenas()  # as the app does first (cli.main), window and command line
        kind, index, value = args.child
        children = {"map": lambda: child_map(index, int(value)),
                    "synthetic": lambda: child_synthetic(int(index), int(value)),
                    "tsne": lambda: child_tsne(index), "scatter": lambda: child_scatter(index, float(value))}
        result = children[kind]()
        print(json.dumps(result))
        return 0
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"embedding map, frames {WIDTH} x {HEIGHT} px, load average {load}")
    for n in filter(None, args.synthetic.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-map-cache-") as cache:
            fig = run_child(["synthetic", n, str(args.frames)], Path(cache), 3600)
        if "gave_up" in fig:
            print(f"-- synthetic {int(n):,}: gave up: {fig['gave_up']}")
            continue
        print(f"-- synthetic placement of {int(n):,} items (frames alone, no index): density index "
              f"{fig['index_s']:.2f} s, colouring {fig['sums_s']:.2f} s, frame median {fig['frame_median_ms']:.1f} ms, "
              f"worst {fig['frame_worst_ms']:.1f} ms; GUI thread median {fig['gui_median_ms']:.1f} ms, worst "
              f"{fig['gui_worst_ms']:.1f} ms; +{fig['added_mb']:,.0f} MB (density index "
              f"{fig['density_mb']:.0f} MB)")
    for size in filter(None, args.sizes.split(",")):
        index = index_of(size)
        if index is None:
            print(f"{size}: no index in {CACHE} (not built here)")
            continue
        with tempfile.TemporaryDirectory(prefix="bench-map-cache-") as cache:
            cold = run_child(["map", str(index), str(args.frames)], Path(cache), 3600)
            warm = run_child(["map", str(index), str(args.frames)], Path(cache), 3600)
            scatter = run_child(["scatter", str(index), str(args.baseline_seconds)], Path(cache),
                                args.baseline_seconds)
        if args.tsne:
            with tempfile.TemporaryDirectory(prefix="bench-map-cache-") as cache:
                tsne = run_child(["tsne", str(index), "0"], Path(cache), 3600)
        print(f"-- {size}: {index.name}")
        for name, fig in (("cold (placed now)", cold), ("warm (from the cache)", warm)):
            if "gave_up" in fig:
                print(f"  {name:<24} gave up: {fig['gave_up']}")
                continue
            print(f"  {name:<24} first picture {fig['first_picture_s']:6.2f} s   "
                  f"all items {fig['full_picture_s']:6.2f} s ({fig['pictures']} pictures)"
                  f"   frame median {fig['frame_median_ms']:5.1f} ms, worst "
                  f"{fig['frame_worst_ms']:5.1f} ms   GUI thread median {fig['gui_median_ms']:4.1f} ms, worst "
                  f"{fig['gui_worst_ms']:5.1f} ms   peak RSS {fig['peak_rss_mb']:,.0f} MB "
                  f"(+{fig['peak_rss_mb'] - fig['base_rss_mb']:,.0f} MB beyond the window's own with the index "
                  f"opened: +{fig['placed_peak_mb']:,.0f} placed, +{fig['drawn_peak_mb']:,.0f} drawn, "
                  f"+{fig['frames_peak_mb']:,.0f} after the frames; density index {fig['density_mb']:.0f} MB)")
        if args.tsne and "gave_up" in tsne:
            print(f"  {'t-SNE, cold':<24} gave up: {tsne['gave_up']}")
        elif args.tsne:
            print(f"  {'t-SNE, cold':<24} first picture (the PCA stand-in) {tsne['stand_in_s']:6.2f} s   first laid "
                  f"out {tsne['laid_out_s']:6.2f} s (the first picture before the stand-in)   all items "
                  f"{tsne['all_s']:6.2f} s (layout of {tsne['anchor']}'s representatives)")
        files = [str(path) for path in index.rglob("*") if path.is_file()]
        print(f"  {'floor':<24} every file of the index read whole: "
              f"{floor_of(files, cold=True, folders=[index]).text()}; cold by {eviction_name()}")
        if "gave_up" in scatter:
            print(f"  {'one ScatterPlotItem':<24} gave up: {scatter['gave_up']}")
        else:
            print(f"  {'one ScatterPlotItem':<24} {scatter['items']:,} points set and drawn once in "
                  f"{scatter['scatter_s']:.2f} s, +{scatter['scatter_added_mb']:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
