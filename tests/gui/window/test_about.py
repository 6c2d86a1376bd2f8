"""The About box shows what is running, so a bug report can say it."""

from __future__ import annotations

import numpy as np
import pyqtgraph
import zarr
from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtGui import QGuiApplication

from ecpfs_viewer import __version__
from ecpfs_viewer.gui.window.about_dialog import about_text, show_about


def test_about_text_names_every_component_and_version():
    text = about_text()
    assert text.splitlines()[0] == f"ecpfs-viewer {__version__}"
    for line in (f"Qt: {qVersion()}", f"PySide6: {pyside_version}", f"zarr: {zarr.__version__}",
                 f"numpy: {np.__version__}", f"pyqtgraph: {pyqtgraph.__version__}", "Licence: MIT"):
        assert line in text.splitlines()
    assert "CC BY 4.0" in text and "Alpaydin" in text


def test_about_box_shows_versions_and_copies_them(qtbot):
    dialog = show_about(None)
    qtbot.addWidget(dialog)
    assert dialog.isVisible() and dialog.isModal()
    shown = dialog.text.text()
    for value in (__version__, qVersion(), zarr.__version__, np.__version__, pyqtgraph.__version__):
        assert value in shown
    assert not dialog.findChild(type(dialog.text)).pixmap().isNull()  # the application icon
    QGuiApplication.clipboard().clear()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == about_text()
    dialog.reject()
    assert not dialog.isVisible()
