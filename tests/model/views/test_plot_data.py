"""What the plot pane is given, computed without Qt: histogram bins, image levels, summary, export."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.histogram import finite_values, histogram, log_histogram
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.export import write_csv, write_npy
from ecpfs_viewer.model.views.plot_data import image_levels, plot_data, prepare_plot
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import Subset


def subset(data: np.ndarray, offsets: tuple[int, ...] = ()) -> Subset:
    array = np.asarray(data)
    return Subset("a", ":", array, offsets or (0,) * array.ndim, array.size)


# -- histogram ---------------------------------------------------------------------------------

def test_narrow_integers_get_one_bin_per_value_centred_on_it() -> None:
    counts, edges = histogram(np.array([3, 5, 5, 7, 7, 7], dtype=np.int32))
    assert edges.tolist() == [2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    assert counts.tolist() == [1, 0, 2, 0, 3]
    assert counts.dtype == np.int64 and edges.dtype == np.float64


def test_wide_integers_get_equal_bins_up_to_max_plus_one() -> None:
    values = np.arange(0, 1000, dtype=np.int64)
    counts, edges = histogram(values, bins=10)
    np.testing.assert_allclose(edges, np.linspace(0, 1000, 11))
    assert counts.tolist() == [100] * 10  # the top value is not squeezed into the last bin


def test_per_value_limit_decides_between_the_two_integer_rules() -> None:
    values = np.arange(1, 41)  # 40 distinct values
    assert len(histogram(values, bins=40, per_value_limit=40)[0]) == 40
    counts, edges = histogram(np.arange(1, 42), bins=40, per_value_limit=40)  # 41 values: equal bins
    assert len(counts) == 40 and edges[0] == 1 and edges[-1] == 42


def test_node_size_rule_of_the_level_overview_is_reproduced() -> None:
    """LevelStats.histogram(max_bins) == histogram(sizes, bins=max_bins, per_value_limit=max_bins)."""
    counts, edges = histogram(np.array([2, 2, 2, 2]), bins=40, per_value_limit=40)
    assert counts.tolist() == [4] and edges.tolist() == [1.5, 2.5]
    empty_counts, empty_edges = histogram(np.zeros(0, dtype=np.int64), bins=40, per_value_limit=40)
    assert empty_counts.size == 0 and empty_edges.tolist() == [0.0]


def test_floats_leave_out_nan_and_inf() -> None:
    counts, edges = histogram(np.array([1.0, np.nan, 2.0, 2.5, np.inf, -np.inf, 3.0], dtype=np.float32))
    assert counts.sum() == 4 and len(counts) == 2  # Freedman-Diaconis: 4 values make 2 bins
    assert (edges[0], edges[-1]) == (1.0, 3.0)


def test_a_constant_gets_one_bin_around_it() -> None:
    counts, edges = histogram(np.full(5, 0.25), bins=4)
    assert counts.sum() == 5 and edges[0] == -0.25 and edges[-1] == 0.75


def test_a_span_counts_only_its_values_and_its_bins_cover_it() -> None:
    floats = np.array([-5.0, 0.0, 0.5, 1.0, 2.0, np.nan, 9.0])
    counts, edges = histogram(floats, bins=4, span=(0.0, 2.0))
    assert edges.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0] and counts.tolist() == [1, 1, 1, 1]
    ints = np.array([1, 2, 2, 3, 7, 50], dtype=np.int32)
    counts, edges = histogram(ints, span=(1.5, 7.0))  # whole values 2..7, one bin each
    assert edges.tolist() == [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5] and counts.tolist() == [2, 1, 0, 0, 0, 1]
    counts, edges = histogram(floats, bins=4, span=(20.0, 30.0))  # nothing inside: no bins
    assert counts.size == 0 and edges.tolist() == [0.0]


def test_booleans_count_false_and_true() -> None:
    counts, edges = histogram(np.array([True, False, True]))
    assert counts.tolist() == [1, 2] and edges.tolist() == [-0.5, 0.5, 1.5]


def test_finite_values_copy_only_when_something_is_left_out() -> None:
    clean = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert np.shares_memory(finite_values(clean), clean)
    assert finite_values(np.array([1.0, np.nan])).tolist() == [1.0]


# -- plot data ---------------------------------------------------------------------------------

def test_2d_numbers_get_a_contiguous_float32_image_levels_and_histogram() -> None:
    values = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]  # not contiguous
    data = plot_data(subset(values))
    assert data.image is not None and data.image.dtype == np.float32 and data.image.flags.c_contiguous
    np.testing.assert_array_equal(data.image, values)
    assert data.levels == (0.0, 10.0)  # integers: the exact range
    assert data.hist_counts is not None and data.hist_counts.sum() == 6
    assert data.summary == "3 x 2 int16 · min 0 · max 10 · mean 5"
    assert data.ndim == 2 and data.note == ""


def test_float_levels_are_percentiles_robust_to_outliers() -> None:
    values = np.linspace(0.0, 1.0, 5000)
    values[0] = -1e6
    low, high = image_levels(values, finite_values(values))
    assert low > -1e6 and high < 1.0
    assert low == pytest.approx(np.percentile(values, 0.5)) and high == pytest.approx(np.percentile(values, 99.5))
    assert image_levels(np.full(3, 2.0), np.full(3, 2.0)) == (2.0, 3.0)  # a flat image still gets a span
    assert image_levels(np.full(3, np.nan), np.zeros(0)) == (0.0, 1.0)


def test_higher_ranks_flatten_trailing_axes_and_say_so() -> None:
    data = plot_data(subset(np.arange(24, dtype=np.float64).reshape(2, 3, 4)))
    assert data.image is not None and data.image.shape == (2, 12)
    assert data.ndim == 3
    assert "axes after the first are flattened: (2, 3, 4) shown as 2 x 12" in data.note


def test_1d_numbers_have_values_and_histogram_but_no_image() -> None:
    data = plot_data(subset(np.array([1.0, np.nan, 3.0])))
    assert data.image is None and data.levels is None
    assert data.values is not None and data.values.ndim == 1
    assert data.summary == "3 float64 · min 1 · max 3 · mean 2 · 1 NaN"


def test_bool_and_complex_become_numbers() -> None:
    flags = plot_data(subset(np.eye(2, dtype=bool)))
    assert flags.values is not None and flags.values.dtype == np.uint8
    waves = plot_data(subset(np.array([3 + 4j, 0j])))
    assert waves.values is not None and waves.values.tolist() == [5.0, 0.0]
    assert waves.note == "complex values: showing the magnitude"


def test_strings_and_scalars_have_no_pictures() -> None:
    names = plot_data(subset(np.array(["a", "b"])))
    assert names.values is None and names.hist_counts is None and names.summary == "2 string"
    scalar = plot_data(subset(np.array(42, dtype=np.uint32)))
    assert scalar.ndim == 0 and scalar.hist_counts is None and scalar.image is None
    assert scalar.summary == "scalar uint32"


def test_prepare_plot_reads_the_default_selection_within_one_chunk(tmp_path: Path) -> None:
    root = zarr.open_group(tmp_path / "s.zarr", mode="w")
    values = np.arange(300 * 8, dtype=np.float32).reshape(300, 8)
    root.create_array("m", shape=values.shape, chunks=(100, 8), dtype="float32")[:] = values
    h = Hierarchy(open_store(tmp_path / "s.zarr"))
    data = prepare_plot(h, "m", None)
    assert data.subset.text == "0:100, :"
    np.testing.assert_array_equal(data.image, values[:100])
    chosen = prepare_plot(h, "m", "250:260, 2")
    assert chosen.subset.offsets == (250,) and chosen.image is None
    np.testing.assert_array_equal(chosen.values, values[250:260, 2])


# -- export ------------------------------------------------------------------------------------

def test_csv_round_trips_numbers_at_full_precision(tmp_path: Path) -> None:
    values = np.random.default_rng(3).normal(size=(4, 3))
    write_csv(values, tmp_path / "f.csv")
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "f.csv", delimiter=","), values)
    single = values.astype(np.float32)
    write_csv(single, tmp_path / "s.csv")
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "s.csv", delimiter=",", dtype=np.float32), single)


def test_csv_writes_one_line_per_row(tmp_path: Path) -> None:
    write_csv(np.array(7), tmp_path / "scalar.csv")
    assert (tmp_path / "scalar.csv").read_text() == "7\n"
    write_csv(np.array([True, False]), tmp_path / "flags.csv")
    assert (tmp_path / "flags.csv").read_text() == "1\n0\n"
    write_csv(np.arange(8).reshape(2, 2, 2), tmp_path / "cube.csv")
    assert (tmp_path / "cube.csv").read_text() == "0,1,2,3\n4,5,6,7\n"


def test_csv_quotes_strings(tmp_path: Path) -> None:
    names = np.array([["a", "b, c"], ["δ", 'say "hi"']])
    write_csv(names, tmp_path / "n.csv")
    with open(tmp_path / "n.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == names.tolist()


def test_npy_is_exact_and_never_pickles(tmp_path: Path) -> None:
    values = np.arange(6, dtype=np.uint16).reshape(2, 3)
    write_npy(values, tmp_path / "v.npy")
    loaded = np.load(tmp_path / "v.npy")
    assert loaded.dtype == np.uint16 and np.array_equal(loaded, values)
    with pytest.raises(ValueError):
        write_npy(np.array([{"a": 1}], dtype=object), tmp_path / "o.npy")


# -- bins, small arrays, table rows ---------------------------------------------------------------

def test_without_bins_the_histogram_follows_freedman_diaconis() -> None:
    from ecpfs_viewer.model.histogram import freedman_diaconis_bins

    values = np.random.default_rng(0).normal(size=160)
    counts, _ = histogram(values)
    assert len(counts) == freedman_diaconis_bins(values, 100) and 5 <= len(counts) <= 20
    assert len(histogram(values, bins=100)[0]) == 100  # an explicit count still wins


def test_table_rows_are_read_lazily_with_the_ids_beside_them(two_clusters_path: Path) -> None:
    from ecpfs_viewer.model.views.plot_data import prepare_table
    from ecpfs_viewer.model.views.table_data import link_level, read_table_rows, row_ids

    h = Hierarchy(open_store(two_clusters_path))
    assert link_level("lvl_1/node_1/node_ids") == 2 and link_level("lvl_2/node_1/item_ids") is None
    ids = row_ids(h, "lvl_2/node_1/embeddings", slice(0, 2, 1))
    assert ids is not None and ids.name == "item id" and ids.values.tolist() == [2, 3] and ids.link_level is None
    table = prepare_table(h, "lvl_2/node_1/embeddings", "1:, :")
    assert table.window is not None and (table.window.rows, table.window.cols) == (1, 2)
    rows, beside = read_table_rows(h, table.window, 0, 5)  # clipped to the rows there are
    np.testing.assert_array_equal(rows, h.read_array("lvl_2/node_1/embeddings")[1:])
    assert beside is not None and beside.values.tolist() == [3]


def test_a_small_array_in_many_chunks_is_shown_whole(tmp_path: Path) -> None:
    root = zarr.open_group(tmp_path / "c.zarr", mode="w")
    root.create_array("cube", shape=(3, 3, 3), chunks=(1, 1, 1), dtype="float32")[:] = 1
    root.create_array("long", shape=(500,), chunks=(1,), dtype="uint8")[:] = 1
    h = Hierarchy(open_store(tmp_path / "c.zarr"))
    assert prepare_plot(h, "cube", None).subset.text == ":, :, :"
    assert prepare_plot(h, "long", None).subset.text == "0:1"  # small, but 500 chunks: one chunk first


def test_statistics_give_percentiles_and_count_nan_and_each_infinity() -> None:
    values = np.concatenate([np.arange(1, 101, dtype=np.float64), [np.nan, np.nan, np.inf, -np.inf, -np.inf]])
    data = plot_data(subset(values))
    stats = data.stats
    assert stats is not None
    assert (stats.size, stats.finite, stats.nan, stats.pos_inf, stats.neg_inf) == (105, 100, 2, 1, 2)
    for q in (1, 5, 50, 95, 99):
        assert stats.percentile(q) == pytest.approx(np.percentile(np.arange(1, 101), q))
    assert stats.percentiles_text() == "p1 1.99 · p5 5.95 · p50 50.5 · p95 95.05 · p99 99.01"
    assert data.summary == "105 float64 · min 1 · max 100 · mean 50.5 · 2 NaN · 3 inf"
    only_plus = plot_data(subset(np.array([1.0, np.inf]))).summary
    assert only_plus.endswith("· 1 +inf")


def test_integer_percentiles_and_no_finite_value() -> None:
    stats = plot_data(subset(np.arange(11, dtype=np.uint8))).stats
    assert stats is not None and stats.percentile(50) == 5.0 and stats.nan == 0
    assert stats.range_text() == "min 0 · max 10 · mean 5"
    empty = plot_data(subset(np.full(4, np.nan))).stats
    assert empty is not None and empty.percentiles is None and empty.percentiles_text() == ""
    assert empty.range_text() == "4 NaN"
    huge = plot_data(subset(np.array([-1.7e308, 1.7e308]))).stats
    assert huge is not None and huge.percentile(50) == 0.0
    assert huge.percentile(99) == pytest.approx(1.666e308, rel=1e-3)  # interpolated without overflowing


def test_log_histogram_bins_whole_sizes_over_orders_of_magnitude() -> None:
    sizes = np.array([0, 1, 1, 2, 3, 10, 100, 1000, 10_000], dtype=np.int64)
    counts, edges, left_out = log_histogram(sizes, bins=8)
    assert left_out == 1 and counts.sum() == 8  # the empty node has no place on a log axis
    assert edges[0] == 0.5 and edges[-1] > 10_000
    assert np.all(edges[1:] > edges[:-1]) and np.all(edges - 0.5 == np.round(edges - 0.5))
    widths = np.diff(np.log10(edges[2:]))  # beyond the first, single-value bins: equal on a log axis
    assert widths.max() / widths.min() < 1.5
    floats, float_edges, none_left = log_histogram(np.array([0.01, 0.1, 1.0, 10.0]), bins=3)
    assert none_left == 0 and floats.tolist() == [1, 1, 2]
    np.testing.assert_allclose(float_edges, [0.01, 0.1, 1.0, 10.0])
    empty, _edges, all_out = log_histogram(np.zeros(3, dtype=np.int64))
    assert empty.size == 0 and all_out == 3
