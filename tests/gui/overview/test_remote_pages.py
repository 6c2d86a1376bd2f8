"""Overview pages over a remote server that stalls or stops: what the user sees while waiting, a
Cancel, one banner with Retry for what could not be read, and Retry asking again."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import remote_fixtures
from PySide6.QtCore import Qt

from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.options import RemoteOptions

pytestmark = pytest.mark.waits  # pages of unanswering servers: request deadlines running out

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


@pytest.fixture
def panel(overview_panel):
    return overview_panel


@contextlib.contextmanager
def stalling(directory: Path, stalled: Callable[[str], bool]) -> Iterator[tuple[str, threading.Event]]:
    """two_clusters' folder served without listings, stalling what `stalled` picks while the event is set."""
    on = threading.Event()
    with remote_fixtures.serve_hostile(directory, "stall", lambda path: on.is_set() and stalled(path)) as (url, _):
        yield url, on


def _click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_a_level_missing_an_unanswered_node_says_so_once_and_retry_reads_it(qtbot, panel, two_clusters_path):
    with stalling(two_clusters_path.parent, lambda p: p.startswith("two_clusters.zarr/lvl_2/node_1/")) as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=3.0)))
        on.set()
        panel.show_level(h, 2)
        qtbot.waitUntil(lambda: not panel.busy and panel.banner.isVisible(), timeout=20000)
        text = panel.banner.text.text()
        assert "Some of lvl_2 could not be read" in text and "lack 1 node that could not be read" in text
        facts = panel.level_page.summary_text()  # the figures say they lack a node, never 'differs from'
        assert "Nodes: 3 of at most 4  (min(ns^2, R)); 1 more could not be read" in facts, facts
        assert ("Sum of leaf sizes: 6 over the nodes read  (incomplete: the figures lack 1 node that could not "
                "be read)") in facts and "differs from" not in facts, facts
        assert panel.banner.retry_button.isVisible()
        on.clear()  # the server answers again
        _click(qtbot, panel.banner.retry_button)
        qtbot.waitUntil(lambda: not panel.busy and panel.level_page.view is not None, timeout=20000)
        assert panel.level_page.view.stats.complete and panel.level_page.view.stats.node_count == 4
        assert not panel.banner.isVisible()


def test_a_page_waiting_on_the_server_says_for_what_and_cancels(qtbot, panel, two_clusters_path):
    with stalling(two_clusters_path.parent, lambda p: p != "two_clusters.zarr/zarr.json") as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=10.0)))
        on.set()
        panel.show_level(h, 2)
        host = url.removeprefix("http://")
        assert panel.status.text() == f"Reading the metadata of lvl_2 … (waiting for {host})"
        assert panel.cancel_button.isVisible() and panel.busy
        _click(qtbot, panel.cancel_button)
        assert not panel.busy and not panel.cancel_button.isVisible()
        assert panel.banner.text.text() == "Cancelled while reading the metadata of lvl_2."
        assert panel.banner.retry_button.isVisible()
        on.clear()
        _click(qtbot, panel.banner.retry_button)
        qtbot.waitUntil(lambda: not panel.busy and panel.level_page.view is not None, timeout=60000)
        assert panel.level_page.view.stats.complete


def test_an_unanswered_index_header_is_said_with_retry_not_as_not_an_index(qtbot, panel, two_clusters_path):
    with stalling(two_clusters_path.parent, lambda p: p != "two_clusters.zarr/zarr.json") as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=3.0)))
        on.set()  # the server stops answering
        host = url.removeprefix("http://")
        panel.show_index(h)
        panel.validate(h)
        qtbot.waitUntil(lambda: not panel.busy and panel.banner.isVisible(), timeout=30000)
        text = panel.banner.text.text()
        # an unanswered read names its timeout; reads made once the server is known not to answer
        # fail at once, and the banner names the host instead
        unanswered = "no answer within 3 s" in text or f"{host} is not answering" in text
        assert "could not be read" in text and unanswered, text
        assert "not a valid ecpfs index" not in text and "missing" not in text
        assert panel.banner.retry_button.isVisible()
        assert panel.last_report(h) is None  # a report of unanswered reads is not kept
        on.clear()
        _click(qtbot, panel.banner.retry_button)
        qtbot.waitUntil(lambda: not panel.busy and panel.last_report(h) is not None, timeout=30000)
        assert panel.last_report(h).ok
        assert not panel.banner.isVisible()


def test_a_server_that_stops_answering_is_one_banner_naming_it(qtbot, panel, two_clusters_path):
    with stalling(two_clusters_path.parent, lambda p: p.startswith(("two_clusters.zarr/lvl_",
                                                                    "two_clusters.zarr/index_root"))) as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=3.0)))
        on.set()
        panel.show_level(h, 2)
        qtbot.waitUntil(lambda: not panel.busy and panel.banner.isVisible(), timeout=30000)
        assert panel.banner.text.text().endswith("Some of lvl_2 could not be read (the server did not answer): "
                                                 "the figures lack the whole level, which could not be read.")
        panel.show_level(h, 1)  # other objects, asked after that failure, unanswered too: the server is down
        qtbot.waitUntil(lambda: not panel.busy and panel.banner.isVisible(), timeout=30000)
        host = url.removeprefix("http://")
        assert panel.banner.text.text().startswith(f"The server at {host} is not answering.")
        assert panel.banner.retry_button.isVisible()
        on.clear()
        _click(qtbot, panel.banner.retry_button)
        qtbot.waitUntil(lambda: not panel.busy and panel.level_page.view is not None, timeout=30000)
        assert panel.level_page.view.stats.complete and not panel.banner.isVisible()
