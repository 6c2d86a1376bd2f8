"""The application started as a user starts it: `ecpfs-viewer PATH --screenshot PNG` opens, draws, quits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from index_factory import build_clustered_index
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel
from remote_fixtures import serve_hostile

from ecpfs_viewer.gui.app import capture_when_loaded, create_main_window
from ecpfs_viewer.gui.runtime import scheduling


def _run(*args: str, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               ECPFS_VIEWER_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "ecpfs_viewer", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_opens_an_index_from_the_command_line_and_saves_the_window(two_clusters_path: Path, tmp_path: Path) -> None:
    shot = tmp_path / "window.png"
    done = _run(str(two_clusters_path), "--screenshot", str(shot), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    image = QImage(str(shot))
    assert (image.width(), image.height()) == (1280, 800)


def test_a_path_that_cannot_be_opened_exits_1_after_showing_why(tmp_path: Path) -> None:
    shot = tmp_path / "window.png"
    done = _run(str(tmp_path / "missing.zarr"), "--screenshot", str(shot), tmp_path=tmp_path)
    assert done.returncode == 1
    assert shot.is_file()


def test_window_identity_matches_the_desktop_entry(tmp_path: Path) -> None:
    """Wayland matches windows by desktop file name (the app id), X11 by WM_CLASS (from argv[0],
    the entry's StartupWMClass): both hold even when started as `python -m ecpfs_viewer` (argv[0]
    '__main__.py')."""
    code = (
        "from ecpfs_viewer.gui.app import ensure_application\n"
        "app = ensure_application(['/somewhere/ecpfs_viewer/__main__.py'])\n"
        "print(app.desktopFileName(), app.applicationName(), app.arguments()[0])\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["io.github.ecpfs_viewer.ecpfs_viewer", "ecpfs-viewer", "ecpfs-viewer"]


def test_the_running_application_collects_garbage_on_the_gui_thread_only(tmp_path: Path) -> None:
    """Automatic collection is off while the window runs (a worker thread must never free Qt
    objects); the GUI thread's timer collects instead, and a cycle of widgets is freed by it.
    Workers hand the GIL over after scheduling.GIL_SWITCH_INTERVAL_S (20 µs), not Python's 5 ms."""
    code = (
        "import gc, sys, weakref\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication, QWidget\n"
        "from ecpfs_viewer.gui import app as gui_app\n"
        "def check():\n"
        "    w = QWidget(); w.cycle = w; ref = weakref.ref(w); del w\n"
        "    junk = [[] for _ in range(2000)]  # enough allocations for generation 0 to come due\n"
        "    def later():\n"
        "        print(gc.isenabled(), ref() is None, sys.getswitchinterval())\n"
        "        QApplication.instance().exit(0)\n"
        "    QTimer.singleShot(2500, later)\n"
        "QTimer.singleShot(0, check)\n"
        "gui_app.run_gui()\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               ECPFS_VIEWER_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    enabled, freed, interval = done.stdout.split()
    assert (enabled, freed) == ("False", "True")
    assert float(interval) == pytest.approx(scheduling.GIL_SWITCH_INTERVAL_S)


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 levels, 2,000 vectors of 8 dimensions, about 10 items per leaf."""
    return build_clustered_index(tmp_path_factory.mktemp("shot"), 2000, 8, clusters=6, seed=3,
                                 levels=3, target_cluster_items=10)


def test_the_screenshot_of_a_selected_node_is_taken_once_its_page_has_loaded(qtbot, three_levels: Path) -> None:
    """What `--select lvl_3/node_1 --screenshot PNG` draws: that node's page, read, not "Reading …"."""
    window = create_main_window(str(three_levels), select="lvl_3/node_1", remember_recent=False)
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    taken: dict[str, object] = {}

    def capture(code: int) -> None:
        page = window.node_page
        taken.update(code=code, path=page.data.info.ref.path if page.data else None,
                     listing=page.listing_label.text(), rows=page.listing_model.rowCount(), facts=page.facts_text(),
                     labels=len(page.facts.findChildren(QLabel)),
                     current=window.overview_stack.currentWidget() is page, image=window.grab().toImage())

    capture_when_loaded(window, "lvl_3/node_1", capture)
    qtbot.waitUntil(lambda: "code" in taken, timeout=60_000)
    assert taken["code"] == 0 and taken["path"] == "lvl_3/node_1" and taken["current"]
    items = window.node_page.data.items
    assert items is not None and taken["rows"] == items.count > 0
    assert str(taken["listing"]).startswith(f"{items.count:,} items") and "Reading" not in str(taken["listing"])
    assert "x the level's median" in str(taken["facts"])  # the comparison with the level, once it arrived
    assert taken["labels"] == 2 * len(str(taken["facts"]).splitlines())  # the labels it replaced are gone
    assert not taken["image"].isNull()


def test_a_screenshot_that_waits_too_long_is_taken_anyway_with_exit_3(qtbot, three_levels: Path) -> None:
    window = create_main_window(str(three_levels), select="lvl_3/node_1", remember_recent=False)
    qtbot.addWidget(window)
    window.show()
    codes: list[int] = []
    capture_when_loaded(window, "lvl_3/no_such_node", codes.append, patience_s=0.5)  # never selected
    qtbot.waitUntil(lambda: bool(codes), timeout=30_000)
    assert codes == [3]


def test_the_command_line_screenshot_of_a_node_exits_0(three_levels: Path, tmp_path: Path) -> None:
    shot = tmp_path / "node.png"
    done = _run(str(three_levels), "--select", "lvl_3/node_1", "--screenshot", str(shot), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    image = QImage(str(shot))
    assert (image.width(), image.height()) == (1280, 800)


@pytest.mark.parametrize("path", ["lvl_9/node_1", "nosuch", "lvl_3/node_999999"])
def test_select_of_a_path_that_does_not_exist_says_so_and_exits_1_after_the_picture(
        three_levels: Path, tmp_path: Path, path: str) -> None:
    """Issue 34: the window waited for a node that will never be selected (it never exited)."""
    shot = tmp_path / "missing.png"
    done = _run(str(three_levels), "--select", path, "--screenshot", str(shot), tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"ecpfs-viewer: error: {path}: no such node"]
    assert QImage(str(shot)).width() == 1280


def test_select_of_a_path_that_does_not_exist_is_said_in_the_window(qtbot, three_levels: Path) -> None:
    window = create_main_window(str(three_levels), select="/lvl_9/node_1", remember_recent=False)
    qtbot.addWidget(window)
    window.show()
    request = window.select_request
    assert request is not None
    qtbot.waitUntil(lambda: request.failure is not None, timeout=30_000)
    assert request.failure == "lvl_9/node_1: no such node"
    assert window.banner.isVisibleTo(window)
    assert window.banner.text.text() == "Could not select lvl_9/node_1\nlvl_9/node_1: no such node"


def test_select_on_a_server_refusing_every_chunk_ends_in_could_not_be_read(three_levels: Path,
                                                                           tmp_path: Path) -> None:
    """Issue 34: chunks answering 403 kept `--select ... --timeout 5 --screenshot` running past 90 s
    (info/levels refused read as "not an index", so the path was waited for in an empty tree).
    A 403 is not retried; the window says what could not be read, takes the picture and exits 1.
    The subprocess timeout only guards the run; the assertions are on what it said and left."""
    shot = tmp_path / "refused.png"
    refused = serve_hostile(three_levels, "forbid", lambda key: "/c/" in key or key.endswith("/c"))
    with refused as (url, _tally):
        done = _run(url, "--select", "lvl_2/node_0/embeddings", "--timeout", "5", "--screenshot", str(shot),
                    tmp_path=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ecpfs-viewer: error: could not open {url}: info/levels: ")
    assert "access denied (403 forbidden)" in line
    assert QImage(str(shot)).width() == 1280
