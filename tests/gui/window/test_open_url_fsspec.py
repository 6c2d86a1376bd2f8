"""File > Open URL… on an fsspec store: the storage options table, its options used to open
(an SFTP server on loopback) and remembered with the URL, secrets by name only."""

from __future__ import annotations

from pathlib import Path

import fsspec_servers
import pytest

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.window import open_dialogs
from ecpfs_viewer.model.storage.options import RemoteOptions

pytest.importorskip("fsspec", reason="fsspec is part of the fsspec extra")


def _fill(dialog: open_dialogs.OpenUrlDialog, url: str, pairs: dict[str, str]) -> None:
    dialog.url.setText(url)
    table = dialog.storage_options
    for key, value in pairs.items():
        row = table.rowCount() - 1  # the empty row always kept last
        table.item(row, 0).setText(key)
        table.item(row, 1).setText(value)


def test_storage_options_table_applies_to_fsspec_urls_only(qtbot) -> None:
    dialog = open_dialogs.OpenUrlDialog()
    qtbot.addWidget(dialog)
    _fill(dialog, "sftp://127.0.0.1:22/x.zarr", {"username": "u", "port": "2222"})
    assert dialog.storage_options.isEnabled() and not dialog.endpoint.isEnabled()
    assert dialog.remote_options().storage_options == (("username", "u"), ("port", "2222"))
    dialog.url.setText("s3://bucket/x.zarr")
    assert not dialog.storage_options.isEnabled() and dialog.endpoint.isEnabled()
    assert dialog.remote_options().storage_options == ()


def test_opened_over_sftp_and_remembered_without_the_password(qtbot, monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "two").mkdir()
    import shutil

    from locations import TWO_CLUSTERS

    shutil.copytree(TWO_CLUSTERS, tmp_path / "two" / "two_clusters.zarr")
    with fsspec_servers.sftp_server(tmp_path / "two") as server:
        url = server.at("two_clusters.zarr")

        def accept(dialog: open_dialogs.OpenUrlDialog) -> int:
            _fill(dialog, url, server.options)
            return 1

        monkeypatch.setattr(open_dialogs.OpenUrlDialog, "exec", accept)
        win = create_main_window(None)
        qtbot.addWidget(win)
        win.show()
        win.commands.open_url_dialog()
        qtbot.waitUntil(lambda: win.session.location == url and not win.is_busy(), timeout=20_000)
        assert win.tree_model.rowCount() > 0
        win.close()
    remembered = app_settings.remote_options_for(url)
    assert remembered is not None
    assert dict(remembered.storage_options) == {**server.options, "password": ""}
    dialog = open_dialogs.OpenUrlDialog(recent=app_settings.recent_urls())
    qtbot.addWidget(dialog)
    assert dialog.location() == url and dict(dialog.storage_options.pairs())["username"] == fsspec_servers.USER
    assert "…" in open_dialogs.describe_options(RemoteOptions(storage_options=(("password", "x"),)))
