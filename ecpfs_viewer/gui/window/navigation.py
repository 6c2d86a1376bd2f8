"""Back and Forward through the selection history: Alt+Left / Alt+Right, the mouse's side buttons,
and the Go menu's actions, which are disabled at either end.

The rules of the history are :class:`SelectionHistory`'s; this module only feeds it what the
tree selects and selects what it answers. Going back reveals a path like a link does (its
ancestors are listed on the way), and the selection that arrives is not a new entry, so the
forward entries stay; the tab it was last seen on (Overview, Data, Metadata) comes back with it.
The history starts again with every index opened or closed.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QMouseEvent, QWindow
from PySide6.QtWidgets import QMainWindow, QTabWidget

from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.tree.tree_item import TreeItem
from ecpfs_viewer.gui.widgets.actions import window_action
from ecpfs_viewer.gui.window.selection_tabs import SelectionTabs
from ecpfs_viewer.model.views.history import SelectionHistory


class SelectionNavigation(QObject):
    """Owns ``back_action`` and ``forward_action`` and the history they walk."""

    def __init__(self, window: QMainWindow, tree: TreePanel) -> None:
        super().__init__(window)
        self.window, self.tree = window, tree
        self.history = SelectionHistory()
        # the paths going back or forward asked the tree to select, not there yet (a path whose
        # ancestors must be listed again arrives later; two quick Alt+Left ask for two)
        self._arriving: set[str] = set()
        self.back_action = window_action(window, "&Back", self.go_back, "Alt+Left", "SP_ArrowBack")
        self.forward_action = window_action(window, "&Forward", self.go_forward, "Alt+Right", "SP_ArrowForward")
        self.back_action.setToolTip("Back to the previous selection (Alt+Left, mouse back button)")
        self.forward_action.setToolTip("Forward to the next selection (Alt+Right, mouse forward button)")
        tree.item_chosen.connect(self._selected)
        self._tabs: QTabWidget | None = None  # the selection's tabs, found once the window has them
        self._side_buttons_window: QWindow | None = None
        window.installEventFilter(self)  # until it is shown: then its native window is watched
        self._update_actions()

    def reset(self) -> None:
        """Another index (or none): the history of the one before means nothing there."""
        self.history.clear()
        self._arriving.clear()
        self._update_actions()

    def go_back(self) -> None:
        self._go(self.history.back())

    def go_forward(self) -> None:
        self._go(self.history.forward())

    def _go(self, path: str | None) -> None:
        if path is None or self.tree.tree_model.hierarchy is None:
            return
        self._arriving.add(path)
        self._update_actions()
        self.tree.reveal_path(path)

    def _selected(self, item: TreeItem) -> None:
        self._watch_tabs()
        if item.path in self._arriving:
            self._arriving.discard(item.path)  # where Back or Forward went: not a new entry
            # the tab it was seen on, once the window has shown the selection on the tab it picks
            QTimer.singleShot(0, lambda path=item.path: self._restore_tab(path))
        else:
            self._arriving.clear()  # the user's own choice: what was on its way no longer matters
            self.history.visit(item.path)
            QTimer.singleShot(0, self._note_tab)  # the tab the window picked for it
        self._update_actions()

    def _watch_tabs(self) -> None:
        if self._tabs is None:
            selection = self.window.findChild(SelectionTabs)
            if selection is not None:
                self._tabs = selection.tabs
                self._tabs.currentChanged.connect(lambda _index: self._note_tab())

    def _note_tab(self) -> None:
        """The tab on screen is the current entry's, when the tree shows that entry."""
        current = self.tree.current_item()
        if self._tabs is not None and current is not None and current.path == self.history.current \
                and not self._arriving:
            self.history.note_view(self._tabs.tabText(self._tabs.currentIndex()))

    def _restore_tab(self, path: str) -> None:
        view = self.history.current_view
        if self._tabs is None or view is None or self.history.current != path:
            return
        for index in range(self._tabs.count()):
            if self._tabs.tabText(index) == view and self._tabs.isTabEnabled(index):
                self._tabs.setCurrentIndex(index)
                return

    def _update_actions(self) -> None:
        self.back_action.setEnabled(self.history.can_go_back())
        self.forward_action.setEnabled(self.history.can_go_forward())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The mouse's back and forward buttons anywhere in this window go back and forward.

        Watched on the native window, which sees every mouse press before the widget under the
        mouse does (a tree or table takes the press for itself); an application-wide filter would
        run Python for every event of every object."""
        if watched is self.window:
            if event.type() == QEvent.Type.Show and self._side_buttons_window is None:
                handle = self.window.windowHandle()
                if handle is not None:
                    self._side_buttons_window = handle
                    handle.installEventFilter(self)
                    self.window.removeEventFilter(self)
            return False
        if event.type() != QEvent.Type.MouseButtonPress or not isinstance(event, QMouseEvent):
            return False
        if event.button() == Qt.MouseButton.BackButton:
            self.go_back()
            return True
        if event.button() == Qt.MouseButton.ForwardButton:
            self.go_forward()
            return True
        return False
