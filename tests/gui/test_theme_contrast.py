"""Every colour the window draws itself reads on its background, in Light and in Dark.

Contrast ratios (WCAG): text at least 4.5:1 against what it is drawn on, lines, icons and the
parts of controls at least 3:1. Measured through the window as a user meets them: the plot pane's
axes, the recall plots' legend and curves (the theme changed after the run), the Back/Forward
arrows, the Build dialog's check boxes, and the Tune plot's curves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QIcon, QImage, QPalette
from PySide6.QtWidgets import QApplication, QCheckBox, QStyle, QStyleOptionButton, QToolButton
from tune_data import CLUSTER, cluster_rows
from window_driver import open_window, run_recall, select

from ecpfs_viewer.gui.runtime.theme import Theme, apply_theme
from ecpfs_viewer.gui.tuning.tune_dialog import TuneDialog
from ecpfs_viewer.gui.widgets.contrast import READABLE, VISIBLE, contrast_ratio

THEMES = [Theme.LIGHT, Theme.DARK]


def strongest(image: QImage, against: QColor, rect=None) -> float:
    """The highest contrast of an opaque pixel of image (within rect) against a colour."""
    area = rect if rect is not None else image.rect()
    ratios = [contrast_ratio(colour, against) for x in range(area.left(), area.right() + 1)
              for y in range(area.top(), area.bottom() + 1)
              if (colour := QColor.fromRgba(image.pixel(x, y))).alpha() > 200]
    return max(ratios, default=0.0)


def background_of(graphics) -> QColor:
    return graphics.backgroundBrush().color()


def assert_axes_read(plot, background: QColor) -> None:
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        assert contrast_ratio(axis.textPen().color(), background) >= READABLE, name
        assert contrast_ratio(axis.pen().color(), background) >= VISIBLE, name
        assert contrast_ratio(axis.label.defaultTextColor(), background) >= READABLE, name


def assert_legend_reads(legend, background: QColor) -> None:
    assert legend is not None and legend.items
    for _sample, label in legend.items:
        colour = QColor(label.opts["color"]) if label.opts.get("color") is not None else QColor("#969696")
        assert contrast_ratio(colour, background) >= READABLE, label.text


@pytest.mark.parametrize("theme", THEMES, ids=lambda t: t.value)
def test_plots_legends_arrows_and_check_boxes_read_in_both_themes(qtbot, two_clusters_path, theme) -> None:
    win = open_window(qtbot, two_clusters_path)
    recall = run_recall(qtbot, win, 20, "1, 2, 4")  # drawn in the start-up palette...
    apply_theme(theme)  # ...then the theme changes under it, live
    window = QApplication.palette().color(QPalette.ColorRole.Window)

    select(qtbot, win, "lvl_2/node_3/embeddings")
    pane = win.plot
    qtbot.waitUntil(lambda: pane.current_view() == "Heatmap", timeout=10_000)
    qtbot.waitUntil(lambda: (background_of(pane.heatmap.view).lightness() < 128) == (theme is Theme.DARK),
                    timeout=5000)
    for plot in (pane.heatmap.heat_plot, pane.heatmap.row_plot):
        assert_axes_read(plot, background_of(pane.heatmap.view))
    assert pane.show_view("Histogram")
    assert_axes_read(pane.histogram.plot, background_of(pane.histogram.view))

    behind = background_of(recall.graphics)
    assert (behind.lightness() < 128) == (theme is Theme.DARK)
    assert_legend_reads(recall.leaves_plot.legend, behind)  # the legend was dark on dark
    for plot in (recall.recall_plot, recall.leaves_plot):
        assert_axes_read(plot, behind)
        for curve in plot.listDataItems():
            assert contrast_ratio(curve.opts["pen"].color(), behind) >= VISIBLE

    arrows = [b for b in win.findChildren(QToolButton)
              if b.defaultAction() in (win.commands.navigation.back_action, win.commands.navigation.forward_action)]
    assert len(arrows) == 2
    for button in arrows:
        glyph = button.defaultAction().icon().pixmap(16, 16, QIcon.Mode.Normal).toImage()
        assert strongest(glyph, button.palette().color(QPalette.ColorRole.Button)) >= VISIBLE
        assert strongest(glyph, window) >= VISIBLE

    win.open_build_dialog()
    dialog = win.secondary.build_dialog
    qtbot.waitExposed(dialog)
    boxes = dialog.findChildren(QCheckBox)
    assert boxes
    for box in boxes:
        box.setChecked(False)
        option = QStyleOptionButton()
        box.initStyleOption(option)
        indicator = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
        shown = box.grab().toImage()
        assert strongest(shown, box.palette().color(box.backgroundRole()), indicator) >= VISIBLE, box.text()
    dialog.close()


@pytest.mark.parametrize("theme", THEMES, ids=lambda t: t.value)
def test_every_tune_curve_stands_out_from_the_plot(qtbot, tmp_path: Path, theme) -> None:
    apply_theme(theme)
    rows, queries = cluster_rows(tmp_path, clusters=12)
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    form = dialog.form
    form.input_edit.setText(str(rows))
    form.levels_edit.setText("1")
    form.targets_edit.setText(f"{CLUSTER}, {2 * CLUSTER}, {3 * CLUSTER}, {4 * CLUSTER}")
    form.source_combo.setCurrentIndex(form.source_combo.findData("file"))
    form.queries_edit.setText(str(queries))
    form.exps_edit.setText("1, 2")
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.report is not None and dialog.run_button.isEnabled(), timeout=120_000)
    plot = dialog.plot
    behind = plot.backgroundBrush().color()
    assert (behind.lightness() < 128) == (theme is Theme.DARK)
    assert len(plot.curves) == 4
    colours = [curve.opts["pen"].color() for curve in plot.curves.values()]
    assert len({c.name() for c in colours}) == 4  # told apart
    for colour in colours:
        assert contrast_ratio(colour, behind) >= VISIBLE, colour.name()  # no indigo on black
    assert_axes_read(plot.getPlotItem(), behind)
    assert_legend_reads(plot.getPlotItem().legend, behind)
