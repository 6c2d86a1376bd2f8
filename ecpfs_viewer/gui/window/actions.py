"""The main window's actions, menus and shortcuts, and what the start page's buttons do.

Kept apart from the window's layout: every command a user can give (File, View, Go and Help
menus, the start page, the recent list) is made here, once, with its keys; the window only
provides the few slots that change what it shows (close, refresh, build, demo).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMainWindow, QMenu

from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.theme import Theme, apply_theme, save_theme, saved_theme
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.widgets.actions import window_action
from ecpfs_viewer.gui.widgets.user_guide import open_guide
from ecpfs_viewer.gui.window.about_dialog import show_about
from ecpfs_viewer.gui.window.cache_dialog import ClearCacheFlow
from ecpfs_viewer.gui.window.clipboard import NodeClipboard
from ecpfs_viewer.gui.window.go_to import GoToPathDialog
from ecpfs_viewer.gui.window.help_dialogs import show_shortcuts
from ecpfs_viewer.gui.window.help_wiring import open_documentation_or_guide, open_page_help
from ecpfs_viewer.gui.window.navigation import SelectionNavigation
from ecpfs_viewer.gui.window.open_dialogs import OpenUrlDialog, ask_index_folder, ask_zip
from ecpfs_viewer.gui.window.session import IndexSession
from ecpfs_viewer.gui.window.start_page import StartPage
from ecpfs_viewer.model.storage.options import RemoteOptions


@dataclass(frozen=True)
class WindowSlots:
    """What only the window can do, for the actions that ask it."""

    close_store: Callable[[], None]
    refresh: Callable[[], None]
    build: Callable[[], None]
    demo: Callable[[], None]
    compare: Callable[[str, RemoteOptions | None], None]  # the window's index beside this one
    tune: Callable[[], None]
    add_vectors: Callable[[], None] = lambda: None
    simulate_drift: Callable[[], None] = lambda: None


class WindowActions(QObject):
    """Owns the window's actions (``open_folder_action`` …) and fills its menu bar."""

    def __init__(self, window: QMainWindow, session: IndexSession, tree: TreePanel, clipboard: NodeClipboard,
                 slots: WindowSlots) -> None:
        super().__init__(window)
        self.window, self.session, self.tree = window, session, tree
        self._compare = slots.compare
        action = partial(window_action, window)

        self.open_folder_action = action("Open Index &Folder…", self.open_folder_dialog, "Ctrl+O", "SP_DirOpenIcon")
        self.open_zip_action = action("Open &Zip…", self.open_zip_dialog)
        self.open_url_action = action("Open &URL…", self.open_url_dialog, "Ctrl+U")
        self.build_action = action("&Build Index from .npy…", slots.build, "Ctrl+B")
        self.demo_action = action("Open &Demo Index", slots.demo)
        self.compare_folder_action = action("Index &Folder…", self.compare_folder_dialog)
        self.compare_zip_action = action("&Zip…", self.compare_zip_dialog)
        self.compare_url_action = action("&URL…", self.compare_url_dialog)
        self.tune_action = action("&Tune…", slots.tune, "Ctrl+Shift+B")
        self.add_vectors_action = action("&Add Vectors…", slots.add_vectors)
        self.simulate_drift_action = action("Simulate &Drift…", slots.simulate_drift)
        self.clear_cache = ClearCacheFlow(window)
        self.clear_cache_action = action("Clear &Cache…", self.clear_cache.start)
        self.close_action = action("&Close", slots.close_store, "Ctrl+W")
        self.quit_action = action("&Quit", window.close, "Ctrl+Q")
        self.refresh_action = action("&Refresh", slots.refresh, "F5", "SP_BrowserReload")
        self.filter_action = action("&Filter Tree", tree.focus_filter, "Ctrl+F")
        self.copy_path_action = action("Copy &Path", clipboard.copy_path, "Ctrl+Shift+C")
        self.go_to_action = action("&Go to Path…", self.go_to_path, "Ctrl+L")
        self.copy_location_action = action("Copy &Full Path or URL", clipboard.copy_location, "Ctrl+Alt+C")
        self.copy_snippet_action = action("Copy Python &Snippet (zarr)", clipboard.copy_snippet)
        self.about_action = action("&About ecpfs-viewer", lambda: show_about(window))
        self.guide_action = action("User &Guide", lambda: open_guide(window))
        self.page_help_action = action("Help on This &Page", lambda: open_page_help(window), "F1")
        self.shortcuts_action = action("&Keyboard Shortcuts", lambda: show_shortcuts(window))
        self.docs_action = action("&Documentation (README)", lambda: open_documentation_or_guide(window))
        tree.item_actions = [self.copy_path_action, self.copy_location_action, self.copy_snippet_action]
        self.navigation = SelectionNavigation(window, tree)
        session.dropping.connect(self.navigation.reset)
        tree.add_tool_actions([self.navigation.back_action, self.navigation.forward_action])

        menu = window.menuBar().addMenu("&File")
        for item in (self.open_folder_action, self.open_zip_action, self.open_url_action):
            menu.addAction(item)
        self.recent_menu = menu.addMenu("Open &Recent")
        self.compare_menu = menu.addMenu("Compare &With")
        self.compare_menu.setToolTipsVisible(True)
        self.compare_menu.setToolTip("Open another index beside this one: summaries, balance, migration, recall")
        for item in (self.compare_folder_action, self.compare_zip_action, self.compare_url_action):
            self.compare_menu.addAction(item)
        self.compare_menu.setEnabled(False)
        session.opened.connect(lambda *_: self.compare_menu.setEnabled(True))
        session.dropping.connect(lambda: self.compare_menu.setEnabled(False))
        menu.addSeparator()
        menu.addAction(self.build_action)
        menu.addAction(self.demo_action)
        menu.addAction(self.clear_cache_action)
        menu.addSeparator()
        menu.addAction(self.close_action)
        menu.addAction(self.quit_action)
        view = window.menuBar().addMenu("&View")
        self.view_menu = view  # features add their panels' actions to it
        for item in (self.refresh_action, self.filter_action, self.copy_path_action, self.copy_location_action,
                     self.copy_snippet_action, tree.expand_action, tree.collapse_action):
            view.addAction(item)
        view.addSeparator()
        self.theme_actions = self._theme_menu(view.addMenu("&Theme"))
        build = window.menuBar().addMenu("&Build")
        build.addAction(self.build_action)
        build.addAction(self.add_vectors_action)
        build.addAction(self.tune_action)
        build.addAction(self.simulate_drift_action)
        go = window.menuBar().addMenu("&Go")
        for item in (self.navigation.back_action, self.navigation.forward_action):
            go.addAction(item)
        go.addSeparator()
        go.addAction(self.go_to_action)
        help_menu = window.menuBar().addMenu("&Help")
        for item in (self.guide_action, self.page_help_action, self.shortcuts_action, self.docs_action):
            help_menu.addAction(item)
        help_menu.addSeparator()
        help_menu.addAction(self.about_action)

    def _theme_menu(self, menu: QMenu) -> dict[Theme, QAction]:
        """View > Theme: System, Light, Dark; the one checked is the one saved and applied."""
        group = QActionGroup(self)
        chosen = saved_theme()
        actions = {}
        for theme in Theme:
            item = menu.addAction(theme.title)
            item.setCheckable(True)
            item.setChecked(theme is chosen)
            item.triggered.connect(lambda _checked=False, t=theme: self.set_theme(t))
            group.addAction(item)
            actions[theme] = item
        return actions

    def set_theme(self, theme: Theme) -> None:
        """Apply a theme to every window now and remember it for the next start."""
        save_theme(theme)
        apply_theme(theme)
        self.theme_actions[theme].setChecked(True)

    def connect_start_page(self, page: StartPage, slots: WindowSlots) -> None:
        page.open_folder_requested.connect(self.open_folder_dialog)
        page.open_zip_requested.connect(self.open_zip_dialog)
        page.open_url_requested.connect(self.open_url_dialog)
        page.build_requested.connect(slots.build)
        page.demo_requested.connect(slots.demo)
        page.recent_requested.connect(self.session.open_recent)
        page.clear_recent_requested.connect(self.session.clear_recent)

    def show_recent(self, locations: list[str]) -> None:
        """The File > Open Recent menu for these locations (newest first)."""
        menu: QMenu = self.recent_menu
        menu.clear()
        for location in locations:
            item = menu.addAction(location)
            item.triggered.connect(lambda _checked=False, where=location: self.session.open_recent(where))
        if locations:
            menu.addSeparator()
        clear = menu.addAction("Clear Recent")
        clear.setEnabled(bool(locations))
        clear.triggered.connect(self.session.clear_recent)

    # -- opening ----------------------------------------------------------------------------------
    def open_folder_dialog(self) -> None:
        path = ask_index_folder(self.window, self.session.dialog_start())
        if path:
            self.session.open_location(path)

    def open_zip_dialog(self) -> None:
        path = ask_zip(self.window, self.session.dialog_start())
        if path:
            self.session.open_location(path)

    def open_url_dialog(self) -> None:
        dialog = OpenUrlDialog(self.window, recent=app_settings.recent_urls())
        if dialog.exec():
            self.session.open_location(dialog.location(), dialog.remote_options())

    # -- comparing --------------------------------------------------------------------------------
    def compare_folder_dialog(self) -> None:
        path = ask_index_folder(self.window, self.session.dialog_start())
        if path:
            self._compare(path, None)

    def compare_zip_dialog(self) -> None:
        path = ask_zip(self.window, self.session.dialog_start())
        if path:
            self._compare(path, None)

    def compare_url_dialog(self) -> None:
        dialog = OpenUrlDialog(self.window, recent=app_settings.recent_urls())
        if dialog.exec():
            self._compare(dialog.location(), dialog.remote_options())

    def go_to_path(self) -> None:
        """Ctrl+L: ask for a path (completion from what is listed) and select it."""
        if self.session.hierarchy is None:
            return
        current = self.tree.current_item()
        dialog = GoToPathDialog((i.path for i in self.tree.tree_model.loaded_items()), self.window,
                                current.path if current is not None else "", self.tree.tree_model)
        dialog.exec()  # it walks the tree to the path, and stays open to say why it cannot
        dialog.deleteLater()
