"""Dialogs that ask where a store is: an index folder, a zip, or a URL with its options."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.model.stores import is_url


def ask_index_folder(parent: QWidget | None, start: str = "") -> str | None:
    """A directory dialog; `*.zarr` folders are directories, so they are chosen like any folder."""
    path = QFileDialog.getExistingDirectory(parent, "Open Index Folder (a *.zarr folder)", start,
                                            QFileDialog.Option.ShowDirsOnly)
    return path or None


def ask_zip(parent: QWidget | None, start: str = "") -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open Zipped Zarr Store", start,
                                          "Zip archives (*.zip);;All files (*)")
    return path or None


def storage_options_for(url: str, endpoint: str, anonymous: bool) -> dict[str, Any]:
    """fsspec storage options for a URL: only s3 takes an endpoint and the anonymous switch."""
    if not url.lower().startswith("s3://"):
        return {}
    options: dict[str, Any] = {}
    if anonymous:
        options["anon"] = True
    if endpoint.strip():
        options["client_kwargs"] = {"endpoint_url": endpoint.strip()}
    return options


class OpenUrlDialog(QDialog):
    """Asks for an http(s), s3 or gs URL; for s3 also an endpoint and anonymous access."""

    def __init__(self, parent: QWidget | None = None, url: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Open URL")
        self.url = QLineEdit(url)
        self.url.setPlaceholderText("https://example.org/index.zarr  or  s3://bucket/index.zarr")
        self.url.setMinimumWidth(460)
        self.endpoint = QLineEdit()
        self.endpoint.setPlaceholderText("optional, e.g. https://s3.eu-central-1.amazonaws.com")
        self.anonymous = QCheckBox("Anonymous access (public bucket, no credentials)")
        self.anonymous.setChecked(True)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        form = QFormLayout()
        form.addRow("URL:", self.url)
        form.addRow("S3 endpoint:", self.endpoint)
        form.addRow("", self.anonymous)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        self.url.textChanged.connect(self._update)
        self._update()

    def _update(self) -> None:
        text = self.url.text().strip()
        s3 = text.lower().startswith("s3://")
        self.endpoint.setEnabled(s3)
        self.anonymous.setEnabled(s3)
        ok = is_url(text)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ok)
        self.hint.setText("" if ok or not text else "Enter a URL starting with http://, https://, s3:// or gs://")

    def location(self) -> str:
        return self.url.text().strip()

    def storage_options(self) -> dict[str, Any]:
        return storage_options_for(self.location(), self.endpoint.text(), self.anonymous.isChecked())
