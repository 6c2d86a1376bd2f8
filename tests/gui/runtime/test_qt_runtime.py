"""The Qt binding we install must not corrupt reference counts (PySide6 6.12.0 on Python 3.11 did:
every void call dropped a reference to None and the interpreter aborted with none_dealloc)."""

import sys

from PySide6.QtWidgets import QWidget


def test_void_qt_calls_keep_references_to_none(qtbot) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    before = sys.getrefcount(None)
    for _ in range(20_000):  # more than None's ordinary reference count
        widget.update()  # a method returning void
    # Other threads may take or drop a few references meanwhile; the bug loses 20,000.
    assert abs(before - sys.getrefcount(None)) < 1_000


def test_emitting_signals_keeps_references_to_true() -> None:
    """PySide6 6.12.0's emit() returned True without a reference: 'bool_dealloc' at exit."""
    from PySide6.QtCore import QObject, Signal

    class Emitter(QObject):
        fired = Signal(int)

    emitter = Emitter()
    emitter.fired.connect(lambda value: None)
    before = sys.getrefcount(True)
    for i in range(20_000):
        emitter.fired.emit(i)
    assert abs(before - sys.getrefcount(True)) < 1_000
