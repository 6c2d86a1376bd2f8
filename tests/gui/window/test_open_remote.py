"""File > Open URL… on remote stores: S3, GCS and Azure with an endpoint (emulators on loopback), and a
static web server."""

from __future__ import annotations

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.tree.tree_item import LoadState
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.ecpfs.derived_listing import DERIVED_NOTE


def _open_via_dialog(qtbot, monkeypatch, url: str, endpoint: str = "") -> MainWindow:
    from ecpfs_viewer.gui.window import open_dialogs
    def accept(dialog: open_dialogs.OpenUrlDialog) -> int:
        dialog.url.setText(url)
        dialog.endpoint.setText(endpoint)
        dialog.anonymous.setChecked(False)
        dialog.timeout.setValue(10)
        return 1

    monkeypatch.setattr(open_dialogs.OpenUrlDialog, "exec", accept)
    win = create_main_window(None)
    qtbot.addWidget(win)
    win.show()
    win.commands.open_url_dialog()
    qtbot.waitUntil(lambda: win.session.location == url and not win.is_busy(), timeout=15_000)
    return win


def _listed_names(qtbot, win: MainWindow, path: str) -> list[str]:
    model = win.tree_model
    win.tree_panel.tree.expand(win.tree_panel.view_index(model.index_for_path(path)))
    qtbot.waitUntil(lambda: model.item(model.index_for_path(path)).state is LoadState.LISTED, timeout=10_000)
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=10_000)
    parent = model.index_for_path(path)
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


def test_open_url_dialog_opens_a_cloud_with_an_endpoint(qtbot, monkeypatch, cloud) -> None:
    win = _open_via_dialog(qtbot, monkeypatch, cloud.url("ecpfs", "two_clusters.zarr"), cloud.endpoint)
    assert _listed_names(qtbot, win, "lvl_2") == ["node_0", "node_1", "node_2", "node_3"]
    assert not win.banner.isVisible()  # listed for real: nothing to say
    win.close()


def test_static_server_tree_says_it_was_derived(qtbot, monkeypatch, static_http_url: str) -> None:
    win = _open_via_dialog(qtbot, monkeypatch, f"{static_http_url}/two_clusters.zarr")
    assert DERIVED_NOTE in win.banner.text.text()
    assert _listed_names(qtbot, win, "lvl_2") == ["node_0", "node_1", "node_2", "node_3"]
    win.close()
