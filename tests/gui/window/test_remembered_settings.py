"""What the window remembers between runs: the theme (View > Theme), recent URLs with their options."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QMenu
from window_driver import open_window, wait_idle

from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.theme import Theme, ThemeStyle, apply_theme
from ecpfs_viewer.gui.widgets.colormaps import is_dark
from ecpfs_viewer.gui.window import open_dialogs
from ecpfs_viewer.model.storage.options import RemoteOptions


def theme_menu(win) -> QMenu:
    return next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&Theme")


def test_theme_changes_the_palette_live_and_survives_a_restart(qtbot, two_clusters_path):
    win = open_window(qtbot, two_clusters_path)
    light = QApplication.palette().color(QPalette.ColorRole.Window)
    actions = {a.text(): a for a in theme_menu(win).actions()}
    assert list(actions) == ["&System", "&Light", "&Dark"] and actions["&System"].isChecked()

    actions["&Dark"].trigger()
    assert is_dark(QApplication.palette()) and isinstance(QApplication.style(), ThemeStyle)
    assert QApplication.style().baseStyle().name().lower() == "fusion"
    qtbot.waitUntil(lambda: is_dark(win.tree_panel.tree.palette()) and is_dark(win.plot.palette()),
                    timeout=5000)  # every widget of the window, with no restart
    assert actions["&Dark"].isChecked() and not actions["&System"].isChecked()
    win.close()

    apply_theme(Theme.SYSTEM)  # as a new process starts: then the saved choice is applied
    assert not is_dark(QApplication.palette())
    again = open_window(qtbot)
    assert is_dark(QApplication.palette())
    assert {a.text(): a.isChecked() for a in theme_menu(again).actions()}["&Dark"]

    {a.text(): a for a in theme_menu(again).actions()}["&System"].trigger()
    assert QApplication.palette().color(QPalette.ColorRole.Window) == light
    again.close()


def test_open_url_offers_recent_urls_with_their_options(qtbot, http_data_url, monkeypatch):
    url = f"{http_data_url}/two_clusters.zarr"

    def fill(dialog: open_dialogs.OpenUrlDialog) -> int:
        dialog.url.setText(url)
        dialog.timeout.setValue(7)
        dialog.in_flight.setValue(5)
        return 1

    monkeypatch.setattr(open_dialogs.OpenUrlDialog, "exec", fill)
    win = open_window(qtbot)
    win.commands.open_url_dialog()
    qtbot.waitUntil(lambda: win.session.current is not None, timeout=10_000)
    wait_idle(qtbot, win)
    assert app_settings.recent_urls() == [(url, RemoteOptions(timeout_s=7, max_in_flight=5))]
    win.close_store()

    # the next Open URL dialog offers it, filled in with its options
    other = RemoteOptions(endpoint="http://127.0.0.1:9", anon=True, timeout_s=3)
    dialog = open_dialogs.OpenUrlDialog(win, recent=[*app_settings.recent_urls(), ("s3://bucket/other.zarr", other)])
    qtbot.addWidget(dialog)
    combo = dialog.url_combo
    assert [combo.itemText(i) for i in range(combo.count())] == [url, "s3://bucket/other.zarr"]
    assert dialog.location() == url and dialog.remote_options() == RemoteOptions(timeout_s=7, max_in_flight=5)
    assert "timeout 7 s" in combo.itemData(0, Qt.ItemDataRole.ToolTipRole)
    combo.setCurrentIndex(1)
    assert dialog.remote_options() == other
    assert dialog.endpoint.isEnabled()

    # File > Open Recent opens the URL again with the options it opened with
    item = next(a for a in win.commands.recent_menu.actions() if a.text() == url)
    item.trigger()
    qtbot.waitUntil(lambda: win.session.current is not None, timeout=10_000)
    wait_idle(qtbot, win)
    assert win.session.remote == RemoteOptions(timeout_s=7, max_in_flight=5)
    win.close()
