"""Index map benchmark: layout (a worker's time) and drawing (GUI-thread time), figures not pass/fail.

    .venv-newest/bin/python benchmarks/bench_index_map.py [--rows 200000] [--synthetic 40000] [--repeat 5]
    .venv-newest/bin/python benchmarks/bench_index_map.py --window INDEX [--png PREFIX]

On the cached benchmark index (16 + 256 + 4,000 = 4,272 nodes) and on a synthetic 40,000-node
layout, prints: the layout (cold: a fresh reader; warm: level statistics cached), and the GUI-thread
time to colour and draw the map as one image, beside drawing the same rectangles as one
QGraphicsRectItem each (scene built and rendered). Targets (issue 24): 4,272 nodes within 100 ms of
GUI-thread time, 40,000 within 1 s.

With --window (issue 35: first picture <= 2 s at 10M): the window at 1280x800 opens INDEX as a user
would (its background work included), Index map is clicked once nothing runs, and the seconds from
the click to the first picture (the tree as listed) and to the map in items are printed with the
process's peak resident memory; --png PREFIX saves the window at both (PREFIX_first.png, PREFIX_map.png).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _bench_index import ROWS, bench_index_path

from ecpfs_viewer.model.diagnostics.index_map import IndexMap, size_overlay
from ecpfs_viewer.model.diagnostics.index_map_layout import LevelInput, layout_index, map_layout
from ecpfs_viewer.model.search import IndexReader

WIDTH, HEIGHT = 1200, 420


def synthetic_map(nodes: int, seed: int = 1) -> IndexMap:
    """Three levels of about nodes/1000, nodes/50 and the rest, random fan-out and leaf sizes."""
    rng = np.random.default_rng(seed)
    counts = [max(nodes // 1000, 1), max(nodes // 50, 2)]
    counts.append(nodes - sum(counts))
    inputs: list[LevelInput] = []
    for depth, count in enumerate(counts):
        ids = np.arange(count, dtype=np.int64)
        if depth + 1 < len(counts):
            owner = np.sort(rng.integers(0, count, counts[depth + 1]))
            children = [np.flatnonzero(owner == i) for i in range(count)]
            rows = np.array([c.size for c in children], np.int64)
        else:
            children = [None] * count
            rows = rng.integers(1, 200, count)
        inputs.append(LevelInput(ids, rows, children, np.zeros(count, np.int8)))
    return map_layout("synthetic", inputs)


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def draw_ms(index_map: IndexMap, repeat: int) -> tuple[float, float]:
    """GUI-thread ms to colour and draw the map (first time, then the median of repeats)."""
    from ecpfs_viewer.gui.diagnostics.map_view import IndexMapView

    view = IndexMapView()
    view.resize(WIDTH, HEIGHT)
    view.show()
    view.grab()  # Qt's first paint of a widget in the process (fonts, backing store) is not the map's
    overlay = size_overlay(index_map)

    def once() -> None:
        view.set_map(index_map, overlay)
        view.grab()  # renders through paintEvent, like the baseline's grab
        assert view.last_draw_seconds > 0

    first = _median_ms(once, 1)
    return first, _median_ms(once, repeat)


def rect_items_ms(index_map: IndexMap) -> float:
    """The baseline: one QGraphicsRectItem per node, the scene built and rendered once."""
    from PySide6.QtGui import QBrush, QColor, QPen
    from PySide6.QtWidgets import QGraphicsScene, QGraphicsView

    from ecpfs_viewer.gui.diagnostics.map_view import overlay_colours

    started = time.perf_counter()
    colours = overlay_colours(index_map, size_overlay(index_map))
    scene = QGraphicsScene()
    pen = QPen(QColor(60, 60, 60))
    for depth, band in enumerate(index_map.levels):
        for i in range(len(band)):
            r, g, b = (int(c) for c in colours[depth][i])
            scene.addRect(float(band.x0[i]), float(depth), float(band.x1[i] - band.x0[i]), 1.0, pen,
                          QBrush(QColor(r, g, b)))
    view = QGraphicsView(scene)
    view.resize(WIDTH, HEIGHT)
    view.fitInView(scene.sceneRect())
    view.show()
    view.grab()
    return (time.perf_counter() - started) * 1e3


def in_window(index: str, png: str | None) -> None:
    """Click to first picture and to the map in items, in the window (see the module docstring)."""
    import resource
    import tempfile

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ecpfs_viewer.gui.app import create_main_window
    from ecpfs_viewer.gui.runtime import settings as app_settings

    settings_dir = tempfile.TemporaryDirectory(prefix="ecpfs-bench-settings-")  # the user's settings untouched
    app_settings.use_settings_dir(settings_dir.name)
    window = create_main_window(index, remember_recent=False)
    window.resize(1280, 800)
    window.show()
    app = QApplication.instance()
    assert app is not None
    panel = window.index_map.panel
    moments: dict[str, float] = {}

    def seen(what: str) -> None:
        moments[what] = time.perf_counter() - moments["click"]
        if png:
            QTimer.singleShot(50, lambda: window.grab().save(f"{png}_{what}.png"))
        if what == "map":
            QTimer.singleShot(300, app.quit)

    panel.sketch_shown.connect(lambda _sketch: seen("first"))
    panel.map_ready.connect(lambda _map: seen("map"))

    def click_when_idle() -> None:
        if window.is_busy():
            QTimer.singleShot(100, click_when_idle)
            return
        moments["click"] = time.perf_counter()
        window.index_map.show_map()

    QTimer.singleShot(300, click_when_idle)
    QTimer.singleShot(600_000, app.quit)
    app.exec()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"index map in the window on {Path(index).name}: first picture {moments.get('first', float('nan')):.2f} s, "
          f"map in items {moments.get('map', float('nan')):.2f} s after the click; peak resident {peak:,} MB "
          f"(the whole window); load average {load}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS, help="items of the benchmark index (default 200,000)")
    parser.add_argument("--synthetic", type=int, default=40_000, help="nodes of the synthetic layout")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--window", metavar="INDEX", help="time the Index map in the window on INDEX instead")
    parser.add_argument("--png", metavar="PREFIX", help="with --window: save the window at both moments")
    args = parser.parse_args(argv)
    from PySide6.QtWidgets import QApplication

    if args.window:
        in_window(args.window, args.png)
        return
    app = QApplication.instance() or QApplication([])
    index = bench_index_path(rows=args.rows)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"index map on {index.name}, {WIDTH} x {HEIGHT} pixels, load average {load}")
    t = time.perf_counter()
    index_map = layout_index(IndexReader(index))
    cold = (time.perf_counter() - t) * 1e3
    reader = IndexReader(index)
    layout_index(reader)
    warm = _median_ms(lambda: layout_index(reader), args.repeat)
    print(f"{'layout, fresh reader (worker)':<44} {cold:>9.1f} ms")
    print(f"{'layout, level statistics cached (worker)':<44} {warm:>9.1f} ms")
    t = time.perf_counter()
    synthetic = synthetic_map(args.synthetic)
    synthetic_layout = (time.perf_counter() - t) * 1e3
    print(f"{f'layout, synthetic {synthetic.node_count:,} nodes (worker)':<44} {synthetic_layout:>9.1f} ms")
    for what, shown, target in ((f"{index_map.node_count:,} nodes", index_map, "100 ms"),
                                (f"{synthetic.node_count:,} nodes", synthetic, "1 s")):
        first, median = draw_ms(shown, args.repeat)
        baseline = rect_items_ms(shown)
        print(f"{f'draw {what}, GUI thread (first / median)':<44} {first:>9.1f} / {median:.1f} ms   "
              f"one QGraphicsRectItem each: {baseline:,.0f} ms ({baseline / max(first, 1e-6):.0f} x)   "
              f"target <= {target}")
    del app


if __name__ == "__main__":
    main()
