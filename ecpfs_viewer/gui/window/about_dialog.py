"""The About box: what is running (application and library versions), its licence and the data credits.

Users paste this text into bug reports, so :func:`about_text` gives it as plain text too.
"""

from __future__ import annotations

import html
import importlib.metadata
import platform

from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ecpfs_viewer import __version__

LICENCE = "MIT"
DATA_CREDITS = (
    "Demo data: Optical Recognition of Handwritten Digits, E. Alpaydin and C. Kaynak (1998), "
    "UCI Machine Learning Repository, doi:10.24432/C50P49, licensed CC BY 4.0 "
    "(copy packaged with scikit-learn)."
)


def _version_of(distribution: str, module: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        # a frozen bundle may lack the metadata: ask the module itself
        try:
            return str(__import__(module).__version__)
        except (ImportError, AttributeError):
            return "not installed"


def component_versions() -> list[tuple[str, str]]:
    """(name, version) of the application and what it runs on, in the order the About box shows."""
    import PySide6

    return [
        ("ecpfs-viewer", __version__),
        ("Python", platform.python_version()),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("zarr", _version_of("zarr", "zarr")),
        ("numpy", _version_of("numpy", "numpy")),
        ("pyqtgraph", _version_of("pyqtgraph", "pyqtgraph")),
    ]


def about_text() -> str:
    """The About box as plain text (for tests, and to copy into a bug report)."""
    lines = [f"ecpfs-viewer {__version__}",
             "Browse, validate and build ecpfs vector indexes (Zarr v3 stores).", ""]
    lines += [f"{name}: {version}" for name, version in component_versions()[1:]]
    lines += ["", f"Licence: {LICENCE}", DATA_CREDITS]
    return "\n".join(lines)


def _icon_label() -> QLabel:
    from importlib.resources import files

    from PySide6.QtGui import QIcon

    from ecpfs_viewer.resources import ICON_SVG

    label = QLabel()
    svg = files("ecpfs_viewer.resources").joinpath(ICON_SVG)
    icon = QIcon(str(svg)) if svg.is_file() else QIcon()
    if not icon.isNull():
        label.setPixmap(icon.pixmap(96, 96))
    label.setAlignment(Qt.AlignmentFlag.AlignTop)
    return label


class AboutDialog(QDialog):
    """Version, components, licence and credits; a Copy button puts the plain text on the clipboard."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About ecpfs-viewer")
        rows = "".join(f"<tr><td>{html.escape(n)}</td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>"
                       for n, v in component_versions()[1:])
        self.text = QLabel(
            f"<h3>ecpfs-viewer {html.escape(__version__)}</h3>"
            "<p>Browse, validate and build ecpfs vector indexes (Zarr v3 stores).</p>"
            f"<table>{rows}</table>"
            f"<p>Licence: {LICENCE}</p><p>{html.escape(DATA_CREDITS)}</p>"
        )
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setMinimumWidth(420)
        top = QHBoxLayout()
        top.addWidget(_icon_label())
        top.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.setToolTip("Copy these versions as text, e.g. for a bug report")
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(about_text()))
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(buttons)


def show_about(parent: QWidget | None = None) -> AboutDialog:
    """Open the About box (modal to parent) and return it."""
    dialog = AboutDialog(parent)
    dialog.setModal(True)
    dialog.show()
    return dialog
