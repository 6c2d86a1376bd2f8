"""The GUI-thread collector: generation by generation on its timer, survivors of a full
collection frozen (so later full collections stay short), everything collected when the window
drops an index."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecpfs_viewer.gui.app import create_main_window, tune_interpreter_for_gui
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.collector import GuiThreadCollector


class Node:
    """A reference cycle: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collector() -> Iterator[GuiThreadCollector]:
    thresholds = gc.get_threshold()
    collector = GuiThreadCollector(interval_s=3600)  # the tests call it, not the timer
    yield collector
    collector.timer.stop()
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def test_a_due_full_collection_frees_cycles_and_freezes_the_survivors(collector) -> None:
    assert not gc.isenabled()
    keep = [Node() for _ in range(10)]
    cycle = weakref.ref(Node())
    gc.set_threshold(1, 1, 1)
    junk = []
    for _ in range(50):  # each pass allocates and moves the counts on until generation 2 is due
        junk.append([[] for _ in range(5)])
        collector.collect_due()
        if gc.get_freeze_count():
            break
    assert cycle() is None
    assert gc.get_freeze_count() > 0 and keep  # survivors are no longer walked


def test_a_frozen_cycle_is_freed_by_collecting_everything(collector) -> None:
    frozen = Node()
    gc.freeze()
    ref = weakref.ref(frozen)
    del frozen
    gc.collect()
    assert ref() is not None  # frozen: even a full collection leaves it
    collector.collect_everything()
    assert ref() is None
    assert gc.get_freeze_count() == 0


def test_an_open_index_is_frozen_and_closing_it_collects_everything(qtbot, two_clusters_path: Path,
                                                                   tmp_path: Path, collector) -> None:
    app_settings.use_settings_dir(tmp_path / "settings")
    gc.unfreeze()
    window = create_main_window()
    qtbot.addWidget(window)
    tuned = tune_interpreter_for_gui()
    tuned.follow_index(window.store_opened, window.store_dropped)
    try:
        window.open_location(str(two_clusters_path))
        qtbot.waitUntil(lambda: window.session.hierarchy is not None and gc.get_freeze_count() > 0, timeout=10_000)
        frozen = Node()  # a cycle of the old index's objects
        gc.freeze()
        ref = weakref.ref(frozen)
        del frozen
        with qtbot.waitSignal(window.store_dropped, timeout=5_000):
            window.close_store()
        qtbot.waitUntil(lambda: gc.get_freeze_count() == 0 and ref() is None, timeout=5_000)
    finally:
        tuned.timer.stop()


def test_young_passes_wait_while_a_listing_is_built_and_at_most_their_time_limit(collector, monkeypatch) -> None:
    from ecpfs_viewer.gui.runtime import collector as collector_module
    from ecpfs_viewer.gui.runtime.collector import CollectionHold

    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "stop":
            passes.append(info["generation"])

    gc.collect()  # no older generation due from earlier tests in this process: only generation 0 comes due
    gc.set_threshold(1, 100, 100)
    gc.callbacks.append(seen)
    try:
        hold = CollectionHold()
        junk = [[[] for _ in range(5)] for _ in range(20)]  # generation 0 comes due
        collector.collect_due()
        assert passes == []  # held while the rows are built
        monkeypatch.setattr(collector_module, "DEFER_AT_MOST_S", 0.0)
        collector.collect_due()
        assert passes == [0]  # a deferral past its limit holds nothing
        monkeypatch.setattr(collector_module, "DEFER_AT_MOST_S", 3600.0)
        hold.end()
        junk.append([[] for _ in range(5)])
        collector.collect_due()
        assert passes == [0, 0]  # and once built, passes run again
    finally:
        gc.callbacks.remove(seen)
