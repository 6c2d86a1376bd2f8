"""The embedding map's drawing hands its temporaries back: a frame, the density index and the colour
sums each return what they freed before the next one asks (model/diagnostics/embedding_map/density.py)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from command_runs import run_limited  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.diagnostics.embedding_map import (
    DensityIndex,
    ItemColours,
    MapProjection,
    Placement,
    colour_sums,
    density_frame,
)

#: a synthetic map (clustered, 50 items a leaf) and frames at zooms 1 to 256: the growth of the
#: process's resident memory from its first frame to its last, in MB
_FRAMES = """
import numpy as np
from ecpfs_viewer import process_memory
from ecpfs_viewer.model.diagnostics.embedding_map import (DensityIndex, ItemColours, MapProjection, Placement,
                                                          colour_sums, density_frame)

def resident_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024

items = int(sys.argv[1])
rng = np.random.default_rng(2)
leaves = items // 50
centres = rng.normal(0, 10, (256, 2))
leaf_centre = centres[rng.integers(0, 256, leaves)] + rng.normal(0, 1, (leaves, 2))
starts = np.linspace(0, items, leaves + 1).astype(np.int64)
coords = (np.repeat(leaf_centre, np.diff(starts), axis=0) + rng.normal(0, 0.3, (items, 2))).astype(np.float32)
placement = Placement(MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), items, 0), np.arange(leaves, dtype=np.int64),
                      starts, coords, np.arange(items, dtype=np.int64))
colours = ItemColours("level1", "synthetic", "a category per leaf", "categorical",
                      leaf_codes=rng.integers(0, 40, leaves).astype(np.int32), names=tuple(f"c{i}" for i in range(40)))
density = DensityIndex(placement)
sums = colour_sums(density, colours)
first = None
for i in range(27):
    centre = coords[int(rng.integers(0, items))]
    view = density.bounds.zoomed(2.0 ** (i % 9), float(centre[0]), float(centre[1]))
    density_frame(density, sums, view, 1200, 800).rgba()
    first = resident_mb() if first is None else first
print(f"grew {resident_mb() - first:.1f}")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resident memory is read from /proc (Linux)")
def test_frames_at_one_zoom_after_another_do_not_grow_the_process() -> None:
    """27 frames of a 2M-item map at zooms 1 to 256: the process grows by at most 30 MB from its first
    frame (about 17 here); when the frames kept their freed temporaries it grew by about 54 MB, and at
    10M items by about 90 MB, the map's peak."""
    done = run_limited(_FRAMES, "2000000")
    assert done.returncode == 0, done.stderr
    grew = float(done.stdout.split()[-1])
    assert grew <= 30, f"the frames grew the process by {grew:.1f} MB"


@pytest.mark.parametrize("from_items", [1000, 1001])
def test_the_index_the_colour_sums_and_each_frame_return_what_they_freed(monkeypatch, from_items: int) -> None:
    """The index and the colour sums hand their freed temporaries back once, after their work (the
    allocator keeps them otherwise), and each frame once the process has grown by FRAME_GROWTH, on a
    map of RETURN_FROM_ITEMS items or more; a smaller map's temporaries are left to the allocator."""
    import ecpfs_viewer.model.diagnostics.embedding_map.density as density_module

    returned: list[int | None] = []
    monkeypatch.setattr(density_module.process_memory, "return_freed_memory", lambda: returned.append(None))
    monkeypatch.setattr(density_module.process_memory, "return_freed_memory_past", returned.append)
    monkeypatch.setattr(density_module, "RETURN_FROM_ITEMS", from_items)
    rng = np.random.default_rng(0)
    starts = np.arange(0, 1001, 50, dtype=np.int64)
    placement = Placement(MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), 1000, 0), np.arange(20, dtype=np.int64),
                          starts, rng.normal(size=(1000, 2)).astype(np.float32), np.arange(1000, dtype=np.int64))
    index = DensityIndex(placement)
    sums = colour_sums(index, ItemColours("level1", "t", "t", "categorical", leaf_codes=np.arange(20, dtype=np.int32),
                                          names=tuple(str(i) for i in range(20))))
    for zoom in (1.0, 64.0):
        density_frame(index, sums, index.bounds.zoomed(zoom), 120, 80)
    growth = density_module.FRAME_GROWTH
    assert returned == ([None, None, growth, growth] if from_items <= 1000 else [])


def test_memory_is_returned_past_a_growth_and_not_before(monkeypatch) -> None:
    """return_freed_memory_past returns memory only once the process has grown by more than it was
    given since it last did, then measures from what is left."""
    from ecpfs_viewer import process_memory

    returned: list[int] = []
    resident = iter([100, 150, 150, 260, 160, 170])
    monkeypatch.setattr(process_memory, "resident_bytes", lambda: next(resident))
    monkeypatch.setattr(process_memory, "return_freed_memory", lambda: returned.append(1) or True)
    monkeypatch.setattr(process_memory, "_RETURNED_AT", [100])
    assert not process_memory.return_freed_memory_past(60)  # 150: grown by 50
    assert process_memory.return_freed_memory_past(40)  # 150: grown by 50, returned; 150 left
    assert process_memory.return_freed_memory_past(100)  # 260: grown by 110, returned; 160 left
    assert not process_memory.return_freed_memory_past(20)  # 170: grown by 10 from what was left
    assert returned == [1, 1]
    if sys.platform.startswith("linux"):
        monkeypatch.undo()
        assert (process_memory.resident_bytes() or 0) > 1 << 20


def test_the_leaf_of_an_item_is_found_without_a_kept_array_of_every_items_leaf() -> None:
    """leaves_of agrees with leaf_pos, empty leaves included; after colouring and frames the placement
    holds only its own arrays (a kept leaf per item was 40 MB of a 10M-item map's peak)."""
    rng = np.random.default_rng(3)
    counts = np.array([0, 4, 0, 0, 3, 5, 0, 2, 0])
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(starts[-1])
    placement = Placement(MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), n, 0),
                          np.arange(counts.size, dtype=np.int64) * 10, starts,
                          rng.normal(size=(n, 2)).astype(np.float32), np.arange(n, dtype=np.int64))
    expected = np.repeat(np.arange(counts.size), counts)
    assert np.array_equal(placement.leaf_pos, expected)
    positions = rng.permutation(n)
    assert np.array_equal(placement.leaves_of(positions), expected[positions])
    index = DensityIndex(placement)
    sums = colour_sums(index, ItemColours("level1", "t", "t", "categorical",
                                          leaf_codes=np.arange(counts.size, dtype=np.int32),
                                          names=tuple(str(i) for i in range(counts.size))))
    density_frame(index, sums, index.bounds.zoomed(64.0), 120, 80)
    held = [value for value in vars(placement).values() if isinstance(value, (np.ndarray, list))]
    assert sum(a.nbytes for a in held if isinstance(a, np.ndarray)) == (
        placement.coords.nbytes + placement.item_ids.nbytes + placement.leaf_start.nbytes + placement.leaf_ids.nbytes)
    assert not [value for value in held if isinstance(value, list)]


def test_a_picture_on_the_way_has_a_coarser_raster_and_its_frames_bin_its_items(monkeypatch) -> None:
    """A sample's density index is at most SAMPLE_GRID cells across (its grid-sized arrays are what the
    window holds while the rest is read), the answer's up to DEFAULT_GRID; zoomed out, the sample's
    frame bins its items one by one, so its counts are exact."""
    import dataclasses

    import ecpfs_viewer.model.diagnostics.embedding_map.density as density_module

    monkeypatch.setattr(density_module, "SAMPLE_GRID", 16)
    rng = np.random.default_rng(5)
    starts = np.arange(0, 4001, 40, dtype=np.int64)
    answer = Placement(MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), 4000, 0), np.arange(100, dtype=np.int64),
                       starts, rng.normal(size=(4000, 2)).astype(np.float32), np.arange(4000, dtype=np.int64))
    sample = dataclasses.replace(answer, sample=True)
    assert DensityIndex(answer).grid == 128 and DensityIndex(sample).grid == 16
    index = DensityIndex(sample)
    frame = density_frame(index, None, index.bounds, 120, 80)
    assert frame.source == "items" and frame.total == 4000
