"""How heatmap values become colours, without Qt: levels, clipping counts, the log scale's limits."""

from __future__ import annotations

import numpy as np
import pytest

from ecpfs_viewer.model.views.color_scale import FULL, LINEAR, LOG, ROBUST, color_scale, with_levels


def test_robust_range_counts_the_values_it_clips_and_the_full_range_none() -> None:
    values = np.linspace(-1.0, 1.0, 2001, dtype=np.float32)
    values[0], values[-1] = -4.7, 4.8
    robust = color_scale(values, LINEAR, ROBUST)
    lo, hi = robust.levels
    assert (lo, hi) == pytest.approx(tuple(np.percentile(values, (0.5, 99.5))))
    assert robust.below == np.count_nonzero(values < lo) and robust.above == np.count_nonzero(values > hi)
    assert robust.clip_text().startswith(f"Colours clip {robust.clipped / values.size:.1%} of values")
    assert robust.clip_text().endswith("the data -4.7 … 4.8")
    full = color_scale(values, LINEAR, FULL)
    assert full.levels == pytest.approx((-4.7, 4.8)) and full.clipped == 0 and full.clip_text() == ""


def test_exact_data_and_small_images_use_the_whole_range() -> None:
    values = np.arange(5000, dtype=np.float32)
    assert color_scale(values, LINEAR, ROBUST, exact=True).levels == (0.0, 4999.0)
    assert color_scale(values[:100], LINEAR, ROBUST).levels == (0.0, 99.0)


def test_a_diverging_map_centres_signed_data_on_zero_only() -> None:
    assert color_scale(np.array([-1.0, 3.0]), LINEAR, FULL, symmetric=True).levels == (-3.0, 3.0)
    assert color_scale(np.array([1.0, 3.0]), LINEAR, FULL, symmetric=True).levels == (1.0, 3.0)


def test_log_scale_draws_log10_and_leaves_non_positive_values_blank_and_counted() -> None:
    values = np.array([[0.01, 1.0, 100.0], [0.0, -5.0, np.nan]], dtype=np.float32)
    scale = color_scale(values, LOG, FULL)
    assert scale.scale == LOG and scale.levels == pytest.approx((-2.0, 2.0))
    np.testing.assert_allclose(scale.image[0], [-2.0, 0.0, 2.0], atol=1e-6)
    assert np.isnan(scale.image[1]).all()
    assert scale.not_positive == 2 and scale.coloured == 3
    assert scale.clip_text() == "2 values ≤ 0 have no place on a log scale (drawn blank)"


def test_log_scale_without_positive_values_is_refused() -> None:
    scale = color_scale(np.array([0.0, -1.0, np.nan]), LOG, FULL)
    assert scale.scale == LINEAR and scale.levels == (-1.0, 0.0)
    assert scale.clip_text() == "No log scale: none of the 2 finite values is above 0 (linear shown)"
    assert color_scale(np.full(2, np.nan), LOG).clip_text() == "No log scale: no finite value (linear shown)"


def test_levels_chosen_by_hand_are_counted_again() -> None:
    scale = with_levels(color_scale(np.arange(10, dtype=np.float32), LINEAR, FULL), (2.0, 6.0))
    assert (scale.below, scale.above, scale.levels) == (2, 3, (2.0, 6.0))
    assert "the bar spans 2 … 6, the data 0 … 9" in scale.clip_text()
