"""Log-axis ticks read as numbers and do not crowd."""

from __future__ import annotations

import math

from ecpfs_viewer.gui.widgets.log_axis import log_ticks


def test_ticks_are_one_two_five_times_powers_of_ten_written_out() -> None:
    ticks = log_ticks([80, 150, 2000])
    assert [label for _, label in ticks] == ["50", "100", "200", "500", "1,000", "2,000"]
    assert all(math.isclose(10**pos, float(label.replace(",", ""))) for pos, label in ticks)


def test_wide_ranges_get_powers_of_ten_only_and_nothing_positive_gets_none() -> None:
    assert [label for _, label in log_ticks([0.5, 3e6])] == ["1", "10", "100", "1,000", "10,000", "100,000",
                                                            "1,000,000"]
    assert log_ticks([0, -1, float("nan")]) == []
