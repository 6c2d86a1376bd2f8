"""The Qt binding we install must not corrupt reference counts (PySide6 6.12.0 on Python 3.11 did)."""

import sys

from PySide6.QtCore import QObject


def test_void_qt_calls_keep_references_to_none() -> None:
    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(500):
        probe.setObjectName("probe")  # a method returning void
    # Other threads may hold or drop a few references meanwhile; a leak would lose 500.
    assert before - sys.getrefcount(None) < 100
