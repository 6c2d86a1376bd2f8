"""Help ▸ User Guide: the packaged guide (resources/guide.md) in a window, offline, with a find field
and links between its sections.

Qt renders the Markdown; its headings carry no anchors, so a link ``#section`` (the guide's own
contents, the overview's glossary, F1 on a page) is followed by finding the heading whose slug it
names and scrolling it to the top. One guide window per main window: asking again raises it.
"""

from __future__ import annotations

import re
import weakref
from importlib.resources import files

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut, QTextBlock, QTextCursor, QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.escape import close_on_escape
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen

GUIDE_RESOURCE = "guide.md"
_OPEN: weakref.WeakKeyDictionary[QWidget, UserGuide] = weakref.WeakKeyDictionary()


def guide_markdown() -> str:
    """The guide's Markdown as packaged."""
    return files("ecpfs_viewer.resources").joinpath(GUIDE_RESOURCE).read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """'Building an index' -> 'building-an-index', 'search_exp' -> 'search_exp': the link of a heading."""
    return re.sub(r"[^a-z0-9_]+", "-", heading.lower()).strip("-")


class UserGuide(QWidget):
    """The guide in a QTextBrowser, a Find field above it; ``show_section(slug)`` scrolls to a heading."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowFlag(Qt.WindowType.Window, True)
        self.setWindowTitle("ecpfs-viewer User Guide")
        self.browser = QTextBrowser()
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._link)
        self.browser.setMarkdown(guide_markdown())
        self.find_edit = QLineEdit()
        self.find_edit.setPlaceholderText("Find in the guide")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.textChanged.connect(lambda: self.find_text(from_top=True))
        self.find_edit.returnPressed.connect(self.find_text)
        back = QShortcut(QKeySequence("Shift+Return"), self.find_edit)
        back.setContext(Qt.ShortcutContext.WidgetShortcut)
        back.activated.connect(lambda: self.find_text(backward=True))
        self.previous_button = QPushButton("Previous")
        self.previous_button.clicked.connect(lambda: self.find_text(backward=True))
        self.next_button = QPushButton("Next")
        self.next_button.clicked.connect(lambda: self.find_text())
        self.find_status = QLabel()
        contents = QPushButton("Contents")
        contents.clicked.connect(lambda: self.browser.verticalScrollBar().setValue(0))
        row = QHBoxLayout()
        row.addWidget(QLabel("Find"))
        row.addWidget(self.find_edit, 1)
        row.addWidget(self.previous_button)
        row.addWidget(self.next_button)
        row.addWidget(self.find_status)
        row.addStretch(0)
        row.addWidget(contents)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.browser, 1)
        close_on_escape(self)
        fit_to_screen(self, 760, 720, "guide")

    # -- sections ------------------------------------------------------------------------------------
    def headings(self) -> dict[str, QTextBlock]:
        """Every heading of the guide by its slug."""
        found: dict[str, QTextBlock] = {}
        block = self.browser.document().begin()
        while block.isValid():
            if block.blockFormat().headingLevel() > 0:
                found.setdefault(slug(block.text()), block)
            block = block.next()
        return found

    def show_section(self, name: str) -> bool:
        """Scroll the heading ``name`` (a slug) to the top; False when the guide has no such section."""
        block = self.headings().get(slug(name))
        if block is None:
            return False
        self._pad_end()
        bar = self.browser.verticalScrollBar()
        cursor = QTextCursor(block)
        self.browser.setTextCursor(cursor)
        layout = self.browser.document().documentLayout()
        bar.setValue(int(layout.blockBoundingRect(block).top()))
        return True

    def _pad_end(self) -> None:
        """Room after the last line, so that the last sections too can scroll to the top."""
        root = self.browser.document().rootFrame()
        frame = root.frameFormat()
        wanted = float(self.browser.viewport().height())
        if abs(frame.bottomMargin() - wanted) > 1:
            frame.setBottomMargin(wanted)
            root.setFrameFormat(frame)

    def current_section(self) -> str:
        """The slug of the heading at the top of the view (or the last one above it)."""
        top = self.browser.verticalScrollBar().value()
        layout = self.browser.document().documentLayout()
        current = ""
        for name, block in self.headings().items():
            if layout.blockBoundingRect(block).top() <= top + 1:
                current = name
        return current

    def _link(self, url: QUrl) -> None:
        if url.scheme() in ("", "guide") and url.fragment():
            self.show_section(url.fragment())
        elif url.scheme() == "guide":
            self.show_section(url.path())
        else:
            QDesktopServices.openUrl(url)

    # -- find ----------------------------------------------------------------------------------------
    def find_text(self, backward: bool = False, from_top: bool = False) -> bool:
        """Select the next (previous) place the Find text occurs, wrapping around; say when there is none."""
        text = self.find_edit.text()
        if not text:
            self.find_status.setText("")
            return False
        if from_top:
            self.browser.moveCursor(QTextCursor.MoveOperation.Start)
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        found = self.browser.find(text, flags)
        if not found:  # wrap around
            self.browser.moveCursor(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
            found = self.browser.find(text, flags)
        self.find_status.setText("" if found else "not found")
        return found


def open_guide(window: QWidget, section: str | None = None) -> UserGuide:
    """Show the guide of ``window`` (made once, then raised), at ``section`` when given."""
    guide = _OPEN.get(window)
    if guide is None:
        guide = UserGuide(window)
        guide.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        _OPEN[window] = guide
    guide.show()
    guide.raise_()
    guide.activateWindow()
    if section:
        guide.show_section(section)
    return guide


def guide_on_f1(window: QWidget, section: str) -> QShortcut:
    """F1 anywhere in a secondary window (Build, Tune, Compare …) opens the guide at its section; the
    guide belongs to that window, so a modal dialog does not block it."""
    shortcut = QShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents), window)
    shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    shortcut.activated.connect(lambda: open_guide(window, section))
    return shortcut
