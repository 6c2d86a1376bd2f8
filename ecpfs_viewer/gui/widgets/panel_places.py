"""Where the Search panel, the index map and the diagnostics live: tabs of the central area beside
Overview, Metadata and Data, or windows of their own; the user's choice, remembered.

Never a strip along the window's edge: a dock below the tabs took its height from the plots and
tables above it (at 1280 x 800 the recall table showed one row; at 1.5x the heatmap shrank to
nothing). A tab has the whole central area; a window has its own size, remembered per panel.
View ▸ Panels shows any panel again, View ▸ Reset Layout puts everything back as first started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow, QMenu, QTabBar, QTabWidget, QVBoxLayout, QWidget

from ecpfs_viewer.gui.runtime import settings as app_settings

_PLACEMENT_KEY = "layout/panels"


class Placement(Enum):
    TABS = "tabs"
    WINDOWS = "windows"


def saved_placement() -> Placement:
    """Where panels open: tabs unless the user chose windows (View ▸ Panels)."""
    value = app_settings.settings().value(_PLACEMENT_KEY, Placement.TABS.value)
    return Placement.WINDOWS if value == Placement.WINDOWS.value else Placement.TABS


def save_placement(placement: Placement) -> None:
    store = app_settings.settings()
    store.setValue(_PLACEMENT_KEY, placement.value)
    store.sync()


class PanelWindow(QWidget):
    """A panel's own window (owned by the main window, so it closes with it); Escape closes it."""

    closed = Signal()

    def __init__(self, key: str, title: str, host: QWidget) -> None:
        super().__init__(host, Qt.WindowType.Window)
        self.key = key
        self.setWindowTitle(f"{title} — ecpfs-viewer")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        escape.setContext(Qt.ShortcutContext.WindowShortcut)
        escape.activated.connect(self.close)
        if not app_settings.restore_widget_state(f"panel_{key}", self):
            self.resize(1000, 640)
        app_settings.clamp_to_screen(self)

    def closeEvent(self, event: QCloseEvent) -> None:
        app_settings.save_widget_state(f"panel_{self.key}", self)
        super().closeEvent(event)
        self.closed.emit()


@dataclass
class _Panel:
    key: str
    title: str
    opener: Callable[[], object]  # what View ▸ Panels runs to show it (makes it when needed)
    action: QAction
    widget: QWidget | None = None
    window: PanelWindow | None = None


class PlacedPanel:
    """A feature's handle on its panel: shown in its place, open or not (tab or window)."""

    def __init__(self, places: PanelPlaces, key: str) -> None:
        self._places, self.key = places, key

    def show(self) -> None:
        self._places.show(self.key)

    def raise_(self) -> None:
        self._places.show(self.key)

    def hide(self) -> None:
        self._places.close(self.key)

    def isVisible(self) -> bool:  # reads like the QWidget it stands for
        return self._places.is_open(self.key)


class PanelPlaces(QObject):
    """Owns the panels' places: tabs of ``tabs`` after its first ``fixed`` ones, or their own windows."""

    placement_changed = Signal(object)  # Placement

    def __init__(self, host: QMainWindow, tabs: QTabWidget, fixed: int, view_menu: QMenu) -> None:
        super().__init__(host)
        self.host, self.tabs, self.fixed = host, tabs, fixed
        self._panels: dict[str, _Panel] = {}
        self.placement = saved_placement()
        tabs.setTabsClosable(True)
        for i in range(fixed):  # Overview, Metadata and Data always stay
            for side in (QTabBar.ButtonPosition.RightSide, QTabBar.ButtonPosition.LeftSide):
                tabs.tabBar().setTabButton(i, side, None)  # None removes it
        tabs.tabCloseRequested.connect(self._tab_close_requested)
        view_menu.addSeparator()
        self.menu = view_menu.addMenu("&Panels")
        self.menu.setToolTipsVisible(True)
        self.windows_action = QAction("Open Panels in Their Own &Windows", self)
        self.windows_action.setCheckable(True)
        self.windows_action.setChecked(self.placement is Placement.WINDOWS)
        self.windows_action.setToolTip("Off: Search, Index map and the diagnostics are tabs beside Data")
        self.windows_action.toggled.connect(
            lambda on: self.set_placement(Placement.WINDOWS if on else Placement.TABS))
        self.reset_action = QAction("Reset &Layout", self)
        self.reset_action.triggered.connect(lambda _checked=False: self.reset())
        self._menu_end = self.menu.addSeparator()
        self.menu.addAction(self.windows_action)
        view_menu.addAction(self.reset_action)
        self.reset_hooks: list[Callable[[], None]] = []  # what else Reset Layout puts back (sizes)

    # -- registering --------------------------------------------------------------------------
    def add(self, key: str, title: str, opener: Callable[[], object], shortcut: str | None = None) -> QAction:
        """A panel View ▸ Panels can show; opener shows it (the feature makes it on first use)."""
        action = QAction(title, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: opener())
        self.menu.insertAction(self._menu_end, action)
        self._panels[key] = _Panel(key, title, opener, action)
        return action

    def panel(self, key: str, title: str, widget: QWidget, opener: Callable[[], object] | None = None,
              shortcut: str | None = None) -> PlacedPanel:
        """A panel made once (Search, Index map): its handle."""
        handle = PlacedPanel(self, key)
        self.add(key, title, opener or handle.show, shortcut)
        self.attach(key, widget)
        return handle

    def attach(self, key: str, widget: QWidget) -> None:
        """The widget that is panel key (a dialog made on first use, or made again)."""
        entry = self._panels[key]
        if entry.widget is not None and entry.widget is not widget:
            self.close(key)
        entry.widget = widget
        widget.setWindowFlags(Qt.WindowType.Widget)  # a dialog too: it lives in a tab or a PanelWindow
        widget.installEventFilter(self)

    def action(self, key: str) -> QAction:
        """View ▸ Panels ▸ (panel key): shows it."""
        return self._panels[key].action

    @property
    def keys(self) -> list[str]:
        return list(self._panels)

    def widget(self, key: str) -> QWidget | None:
        return self._panels[key].widget

    # -- showing ------------------------------------------------------------------------------
    def show(self, key: str) -> None:
        """Show panel key in its place and bring it forward."""
        entry = self._panels[key]
        widget = entry.widget
        if widget is None:
            entry.opener()
            return
        if self.placement is Placement.TABS:
            index = self.tabs.indexOf(widget)
            if index < 0:
                index = self.tabs.addTab(widget, entry.title)
            widget.show()
            self.tabs.setCurrentIndex(index)
        else:
            if entry.window is None:
                entry.window = PanelWindow(key, entry.title, self.host)
                entry.window.closed.connect(lambda k=key: self._window_closed(k))
            layout = entry.window.layout()
            if layout is not None and layout.indexOf(widget) < 0:
                layout.addWidget(widget)
            widget.show()
            entry.window.show()
            entry.window.raise_()
            entry.window.activateWindow()

    def is_open(self, key: str) -> bool:
        entry = self._panels[key]
        if entry.widget is None:
            return False
        if self.tabs.indexOf(entry.widget) >= 0:
            return True
        return entry.window is not None and entry.window.isVisible()

    def close(self, key: str) -> None:
        """Take panel key off screen (its tab goes, its window closes); the panel itself is kept."""
        entry = self._panels[key]
        widget = entry.widget
        if widget is not None:
            index = self.tabs.indexOf(widget)
            if index >= 0:
                self.tabs.removeTab(index)
        if entry.window is not None and entry.window.isVisible():
            entry.window.close()

    def _tab_close_requested(self, index: int) -> None:
        widget = self.tabs.widget(index)
        if widget is not None:
            self.close_widget(widget)

    def close_windows(self) -> None:
        """The main window closes: so do the panels' own windows (each remembers its geometry)."""
        for entry in self._panels.values():
            if entry.window is not None and entry.window.isVisible():
                entry.window.close()

    def close_widget(self, widget: QWidget) -> None:
        for entry in self._panels.values():
            if entry.widget is widget:
                self.close(entry.key)

    def forget(self, key: str) -> None:
        """Panel key's widget is about to be deleted (a dialog of a dropped index)."""
        self.close(key)
        entry = self._panels[key]
        if entry.widget is not None:
            entry.widget.removeEventFilter(self)
            with contextlib.suppress(RuntimeError):  # already deleted
                entry.widget.setParent(None)  # off the window it sat in
        entry.widget = None

    def _window_closed(self, key: str) -> None:
        entry = self._panels[key]
        if entry.widget is not None and self.tabs.indexOf(entry.widget) < 0:
            entry.widget.hide()

    # -- the user's choice --------------------------------------------------------------------
    def set_placement(self, placement: Placement) -> None:
        """Move every open panel to tabs or to windows, and remember the choice."""
        if placement is self.placement:
            return
        open_keys = [key for key in self._panels if self.is_open(key)]
        for key in open_keys:
            self.close(key)
        self.placement = placement
        save_placement(placement)
        self.windows_action.blockSignals(True)
        self.windows_action.setChecked(placement is Placement.WINDOWS)
        self.windows_action.blockSignals(False)
        for key in open_keys:
            self.show(key)
        self.placement_changed.emit(placement)

    def reset(self) -> None:
        """View ▸ Reset Layout: panels back in tabs (closed), window and splitters at their first sizes."""
        for key in self._panels:
            self.close(key)
            app_settings.settings().remove(f"layout/panel_{key}")
        self.set_placement(Placement.TABS)
        self.tabs.setCurrentIndex(min(1, self.tabs.count() - 1))
        for hook in self.reset_hooks:
            hook()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Escape in a panel that is a dialog would hide it inside its tab (an empty page): a panel
        in a tab ignores it, a panel in a window closes the window."""
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) \
                and event.key() == Qt.Key.Key_Escape:
            for entry in self._panels.values():
                if entry.widget is watched and entry.window is not None and entry.window.isVisible():
                    entry.window.close()
            return True
        return False
