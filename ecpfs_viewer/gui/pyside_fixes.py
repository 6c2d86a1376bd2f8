"""Work around a reference-counting bug of PySide6 6.12.0: ``SignalInstance.emit`` returns its
result (``True``) without taking a reference, so every ``emit()`` from Python lowers the
reference count of ``True`` by one; after some thousands of emits CPython 3.11 aborts with
"Fatal Python error: bool_dealloc". The bug is detected at import (a few probe emits) and only
then is ``emit`` wrapped to add the missing reference; a fixed PySide6 is left untouched.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal, SignalInstance

_PROBES = 64


class _Probe(QObject):
    fired = Signal()


def emit_loses_a_reference() -> bool:
    """True when emitting a signal lowers the reference count of its result (the 6.12.0 bug)."""
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(_PROBES):
        probe.fired.emit()
    lost = before - sys.getrefcount(True)
    if lost > 0:
        for _ in range(lost):  # give back what the probe took
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))
    return lost >= _PROBES // 2


def install() -> bool:
    """Wrap SignalInstance.emit when the running PySide6 needs it; returns whether it did."""
    if getattr(SignalInstance.emit, "_ecpfs_fixed", False) or not emit_loses_a_reference():
        return False
    original = SignalInstance.emit

    def emit(self: SignalInstance, *args: Any) -> Any:
        result = original(self, *args)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(result))  # the reference PySide6 forgot
        return result

    emit._ecpfs_fixed = True  # type: ignore[attr-defined]
    SignalInstance.emit = emit  # type: ignore[method-assign]
    return True
