"""The node page's text fits, as a user reads it: facts never cut at the right edge or clipped below
in a narrow pane; the children and items tables sort by a header click (the row double-clicked is
the row shown), an empty Finding column is hidden, a finding takes the width left."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QHeaderView, QScrollArea, QTableView

from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.widgets.display import widest_unbreakable
from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-level index of 1,500 Gaussian vectors: about a dozen children of unequal sizes per node."""
    folder = tmp_path_factory.mktemp("listing")
    data = np.random.default_rng(8).normal(size=(1500, 6)).astype(np.float32)
    np.save(folder / "data.npy", data)
    build_index(folder / "data.npy", folder / "index.zarr", BuildParams(levels=2, target_cluster_items=12))
    return folder / "index.zarr"


def shown_node(qtbot, show, location: Path, ref: NodeRef) -> NodePage:
    page: NodePage = show(NodePage(), 1000, 700)
    with qtbot.waitSignal(page.loaded, timeout=10_000):
        page.show_node(Hierarchy(open_store(location)), ref)
    return page


def click_header(qtbot, view: QTableView, column: int) -> None:
    header = view.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def column_texts(page: NodePage, column: int) -> list[str]:
    model = page.listing_model
    return [model.index(r, column).data() for r in range(model.rowCount())]


def test_children_sort_by_rows_and_name_and_a_double_click_opens_the_row_shown(qtbot, show, built) -> None:
    page = shown_node(qtbot, show, built, NodeRef(0, 0))
    rows = [int(t.replace(",", "")) for t in column_texts(page, 2)]
    assert len(rows) > 3 and rows != sorted(rows)
    click_header(qtbot, page.listing, 2)
    assert [int(t.replace(",", "")) for t in column_texts(page, 2)] == sorted(rows)
    click_header(qtbot, page.listing, 2)
    shown = [int(t.replace(",", "")) for t in column_texts(page, 2)]
    assert shown == sorted(rows, reverse=True)
    biggest = column_texts(page, 1)[0]
    opened: list[str] = []
    page.node_requested.connect(opened.append)
    rect = page.listing.visualRect(page.listing_model.index(0, 1))
    qtbot.mouseClick(page.listing.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(page.listing.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened and opened[0] == biggest  # the largest child, first in the sorted table
    click_header(qtbot, page.listing, 1)
    names = column_texts(page, 1)
    assert names == sorted(names, key=lambda p: int(p.rsplit("_", 1)[1]))  # node_2 before node_10


def test_leaf_items_sort_by_item_id(qtbot, show, built) -> None:
    page = shown_node(qtbot, show, built, NodeRef(2, 3))
    ids = [int(t) for t in column_texts(page, 1)]
    click_header(qtbot, page.listing, 1)
    click_header(qtbot, page.listing, 1)
    assert [int(t) for t in column_texts(page, 1)] == sorted(ids, reverse=True)
    assert column_texts(page, 0) == [str(r) for r in np.argsort(ids, kind="stable")[::-1]]  # each id keeps its row


def test_an_empty_finding_column_is_hidden_and_a_finding_takes_the_width_left(qtbot, show, built,
                                                                             tmp_path: Path) -> None:
    page = shown_node(qtbot, show, built, NodeRef(0, 0))
    assert page.listing.isColumnHidden(4) and page.listing_model.headerData(4, Qt.Orientation.Horizontal) == "Finding"
    broken = tmp_path / "index.zarr"
    shutil.copytree(built, broken)
    child = page.listing_model.path_at(1)
    shutil.rmtree(broken / child)
    page = shown_node(qtbot, show, broken, NodeRef(0, 0))
    listing = page.listing
    assert not listing.isColumnHidden(4)
    assert listing.horizontalHeader().sectionResizeMode(4) is QHeaderView.ResizeMode.Stretch
    header = listing.horizontalHeader()
    assert header.sectionViewportPosition(4) + header.sectionSize(4) >= listing.viewport().width() - 1  # to the edge
    message = page.listing_model.index(1, 4).data()
    assert "does not exist" in message
    assert message in page.listing_model.index(1, 4).data(Qt.ItemDataRole.ToolTipRole)


def lowest_ink_row(label) -> int:
    """The lowest pixel row of a label drawn in the text colour (an underscore is its lowest ink)."""
    image = label.grab().toImage()
    ink = label.palette().color(label.foregroundRole()).lightness()
    rows = [y for y in range(image.height())
            if any(abs(image.pixelColor(x, y).lightness() - ink) < 60 for x in range(image.width()))]
    return max(rows) * label.height() // image.height() if rows else -1


def test_facts_in_a_narrow_pane_wrap_scroll_and_keep_their_underscores(qtbot, show, built) -> None:
    page = shown_node(qtbot, show, built, NodeRef(2, 3))
    page.resize(620, 480)
    splitter = page.facts.parentWidget().parentWidget().parentWidget()
    splitter.setSizes([140, 480])  # the facts' pane as narrow as a user drags it
    qtbot.waitUntil(lambda: page.facts.parentWidget().width() < 150, timeout=3000)
    scroll = page.facts.parentWidget().parentWidget()
    assert isinstance(scroll, QScrollArea)
    labels = page.facts.labels()
    rep = next(value for key, value in labels if key.text() == "Representative")
    assert "rep_item_ids[" in rep.text()
    for (key, value), line in zip(labels, page.facts.text().splitlines(), strict=True):
        for label, whole in ((key, key.text()), (value, line.split(": ", 1)[1])):
            assert label.width() >= widest_unbreakable(label, whole), whole  # never cut at the right
            assert label.height() >= label.heightForWidth(label.width()), whole  # every wrapped line shown
            assert lowest_ink_row(label) < label.height() - 1, whole  # a free pixel below the underscores
    if page.facts.width() > scroll.viewport().width():  # a word longer than the pane: scroll, not cut
        assert scroll.horizontalScrollBar().isVisible()
    assert "row 0 of lvl_1/node_" in page.facts_text()
