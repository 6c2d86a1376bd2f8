"""Garbage collection on the GUI thread, in short pauses.

Python's collector runs on whatever thread allocates. A Qt object it frees on a worker thread is
destroyed later on the GUI thread at an arbitrary point, where PySide can deadlock; so automatic
collection is turned off and a GUI-thread timer collects instead (as pyqtgraph's
GarbageCollector does). A full collection walks every tracked object: with a 4,000-node level open
that is hundreds of thousands of objects, a pause in which the window cannot repaint, and it grows
with the index. Objects that survive a full collection are long-lived (the tree, caches, the opened
store), so they are frozen (:func:`gc.freeze`, the ``gc_freeze`` knob of scheduling.py) and later
full collections walk only what came after. When the user opens or closes an index, most of them
become garbage: then :meth:`GuiThreadCollector.collect_everything` unfreezes and collects all, once,
at a moment the user expects work. It does not freeze again: a cancelled task may still hold the old
index for a while, and the next full collection that comes due frees it then, before freezing what
is left.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer, SignalInstance

from ecpfs_viewer.gui.runtime import scheduling


def _freeze() -> None:
    """Walk what exists now no more in full collections (unless the gc_freeze knob is off)."""
    if scheduling.KNOBS_ON.gc_freeze:
        gc.freeze()


class GuiThreadCollector(QObject):
    """Turns automatic collection off and collects generation by generation on a timer."""

    def __init__(self, interval_s: float = 1.0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(int(interval_s * 1000))
        self.timer.timeout.connect(self.collect_due)
        self.timer.start()

    def collect_due(self) -> None:
        """Collect the oldest generation whose allocation count passed its threshold (and the
        younger ones with it), as Python's own collector would have."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                if generation == 2:
                    _freeze()  # what survived a full collection is long-lived: walk it no more
                return

    def follow_index(self, opened: SignalInstance, dropped: SignalInstance) -> None:
        """Freeze what exists once an index has opened (the window and the index live on, so the
        first full collection need not walk them), and collect everything once
        one was dropped; each after the event that emitted the signal has finished."""
        opened.connect(lambda *_: QTimer.singleShot(0, _freeze))
        dropped.connect(lambda *_: QTimer.singleShot(0, self.collect_everything))

    def collect_everything(self) -> None:
        """Unfreeze and collect all generations (after an index was closed)."""
        gc.unfreeze()
        gc.collect()
