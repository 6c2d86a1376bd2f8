"""PySide6 + pyqtgraph user interface on top of ecpfs_viewer.model."""

import ctypes
import sys


def _guard_none_refcount() -> None:
    """Work around PySide6 6.12.0 on Python 3.11: every call of a void Qt method drops a reference to None.

    After a few thousand such calls (a pyqtgraph repaint makes hundreds) Python aborts with
    "none_dealloc: deallocating None". Python 3.12+ made None immortal, so only older
    interpreters need this; the probe below applies the fix only when the leak is really there.
    """
    if sys.version_info >= (3, 12):
        return
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(32):
        probe.setObjectName("probe")  # a void method
    if before - sys.getrefcount(None) >= 32:
        ctypes.c_ssize_t.from_address(id(None)).value += 1 << 40  # never reaches zero in practice


_guard_none_refcount()

from ecpfs_viewer.gui import pyside_fixes as _pyside_fixes

_pyside_fixes.install()  # PySide6 6.12.0 drops a reference on every emit(); see the module
