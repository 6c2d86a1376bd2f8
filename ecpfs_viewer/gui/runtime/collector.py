"""Garbage collection on the GUI thread, in short pauses.

Python's collector runs on whatever thread allocates. A Qt object it frees on a worker thread is
destroyed later on the GUI thread at an arbitrary point, where PySide can deadlock; so automatic
collection is turned off and a GUI-thread timer collects instead (as pyqtgraph's
GarbageCollector does). A full collection walks every tracked object: with a 4,000-node level open
that is hundreds of thousands of objects, a pause in which the window cannot repaint, and it grows
with the index. Objects that survive two passes are long-lived (the tree, caches, the opened
store), so they are frozen (:func:`gc.freeze`, the ``gc_freeze`` knob of scheduling.py) and later
passes walk only what came after; the rows of a large level just listed are frozen at once. When
the user opens or closes an index, most of them become garbage: then
:meth:`GuiThreadCollector.collect_everything` unfreezes and collects all, once, at a moment the user
expects work.
"""

from __future__ import annotations

import gc
import threading
import time

from PySide6.QtCore import QObject, QTimer, SignalInstance

from ecpfs_viewer import process_memory
from ecpfs_viewer.gui.runtime import scheduling

#: how often the GUI thread looks whether a collection is due: a generation-0 pass walks every
#: object that survived since the last one, so the pause grows with what workers allocated meanwhile
COLLECT_EVERY_S = 0.2
#: young passes after which generation 1 is collected (Python's default threshold is 10)
MIDDLE_AFTER = 2


#: seconds young passes may wait for a listing being built before they run anyway: a bound on the
#: reference cycles left uncollected meanwhile. Listing the 200,000-node leaf level of a 10M index
#: takes about 2.5 s alone and 5 s in the window beside validation; a pass cut into it walked the
#: 1.8 million objects built by then (194 ms)
DEFER_AT_MOST_S = 30.0

_deferring_lock = threading.Lock()
_deferring: dict[CollectionHold, float] = {}  # each hold under way -> when it started or was renewed


class CollectionHold:
    """Holds the GUI thread's young passes while a worker builds a large long-lived structure (a
    200,000-row listing) and until the GUI thread has linked it in and frozen it (:meth:`end`). A
    pass meanwhile walks every object built so far, once young and again as middle-aged, on the GUI
    thread (180 and 130 ms seen at 10M items, when the hold ended as the worker finished, before the
    rows were linked in). At most DEFER_AT_MOST_S after it started or was last renewed: a hold never
    ended (a result dropped) keeps no pass from running for long."""

    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        """Hold for DEFER_AT_MOST_S from now (the worker is done: the GUI thread links it in next)."""
        with _deferring_lock:
            _deferring[self] = time.monotonic()

    def end(self) -> None:
        """Passes may run again (as far as this hold goes); ending twice is harmless."""
        with _deferring_lock:
            _deferring.pop(self, None)


def _collection_held() -> bool:
    """Whether a hold under way keeps young passes from running; holds past their bound are dropped."""
    now = time.monotonic()
    with _deferring_lock:
        for hold in [hold for hold, since in _deferring.items() if now - since >= DEFER_AT_MOST_S]:
            del _deferring[hold]
        return bool(_deferring)


def _freeze() -> None:
    """Walk what exists now no more in full collections (unless the gc_freeze knob is off)."""
    if scheduling.KNOBS_ON.gc_freeze:
        gc.freeze()


def keep_long_lived() -> None:
    """What exists now lives as long as the index (the rows of a 40,000-node level just listed, and
    the nodes behind them): freeze it, so no collection walks it again (unless gc_freeze is off).
    Otherwise the next passes on the GUI thread walk them all, a pause that grows with the level."""
    _freeze()


class GuiThreadCollector(QObject):
    """Turns automatic collection off and collects generation by generation on a timer."""

    def __init__(self, interval_s: float = COLLECT_EVERY_S, parent: QObject | None = None) -> None:
        super().__init__(parent)
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(int(interval_s * 1000))
        self.timer.timeout.connect(self.collect_due)
        self.timer.start()

    def collect_due(self) -> None:
        """Collect the oldest generation whose allocation count passed its threshold (and the
        younger ones with it), as Python's own collector would have; but generation 1 comes due
        after MIDDLE_AFTER young passes, and what survives it is frozen: every object is walked
        twice at most, so a pass walks what workers allocated lately, never the whole index."""
        if _collection_held():
            return
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[2] > thresholds[2]:
            gc.collect(2)
            _freeze()
        elif counts[1] >= min(thresholds[1], MIDDLE_AFTER):
            gc.collect(1)
            _freeze()  # survived two passes: long-lived (cycles that die later wait for collect_everything)
        elif counts[0] > thresholds[0]:
            gc.collect(0)

    def follow_index(self, opened: SignalInstance, dropped: SignalInstance) -> None:
        """Freeze what exists once an index has opened (the window and the index live on, so the
        first full collection need not walk them), and collect everything once
        one was dropped; each after the event that emitted the signal has finished."""
        opened.connect(lambda *_: QTimer.singleShot(0, _freeze))
        dropped.connect(lambda *_: QTimer.singleShot(0, self.collect_everything))

    def collect_everything(self) -> None:
        """Unfreeze and collect all generations (after an index was closed), and give what the
        index held back to the system."""
        gc.unfreeze()
        gc.collect()
        process_memory.return_freed_memory()
