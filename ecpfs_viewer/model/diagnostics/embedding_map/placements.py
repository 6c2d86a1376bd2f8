"""How the embedding map places the items: the one table of placements (:data:`MAP_PLACEMENTS`) and
:func:`placed_map`, what the window and ``ecpfs-viewer map --placement`` call.

``pca`` (the default) is progressive.py's PCA. ``tsne`` (the ``layout`` extra) is that PCA placement
with every leaf moved to where a t-SNE layout of the representatives put its representative
(tsne.py): the PCA placement is made (or taken from the cache) as usual, the layout is made at its
first picture (the tree above the leaves only), and every picture on the way and the answer are moved
by it. The first picture is handed on twice: on the PCA axes at once (marked as a stand-in), and
laid out when the layout is made; a PCA placement the cache answered whole is the stand-in. The
answer is kept in the index's cache under its own entry (the method, the cap, the fit and the seed
in its name; a PCA entry never answers for it), with the stamps of the nodes the layout read and of
the PCA entry it was made from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from ecpfs_viewer.model.diagnostics.embedding_map.placement import DEFAULT_SEED, FIT_ITEMS
from ecpfs_viewer.model.diagnostics.embedding_map.placement_cache import placement_writer
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import (
    BLOCK_LEAVES,
    MapPicture,
    _kept,
    entry_name,
    progressive_placement,
)
from ecpfs_viewer.model.diagnostics.embedding_map.tsne import (
    LAYOUT_EXTRA,
    MISSING,
    TSNE_CAP,
    LayoutProjection,
    apply_layout,
    lay_out,
    tsne_available,
)
from ecpfs_viewer.model.diagnostics.index_map_layout import tree_inputs
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.storage.stamps import Stamps
from ecpfs_viewer.model.tasks import ProgressCallback

TSNE_ENTRY = "embedding_map_v2_tsne_c{cap}_f{fit}_s{seed}.npz"
#: what the first picture of a t-SNE map is, shown before the layout exists
TSNE_STAND_IN = "on the PCA axes while the t-SNE layout of the representatives is made"


@dataclass(frozen=True)
class MapPlacementMethod:
    """One way of placing the items: its id (``map --placement``), its title and what it means."""

    id: str
    title: str
    meaning: str
    extra: str = ""  # the optional extra it needs ('' none)
    available: Callable[[], bool] = lambda: True

    def refusal(self) -> str:
        """'' when it can be used here, else the one sentence that says what to install."""
        return "" if self.available() else MISSING


MAP_PLACEMENTS: tuple[MapPlacementMethod, ...] = (
    MapPlacementMethod("pca", "PCA", "the two principal axes of a sample of items, every item on them "
                       "(deterministic, seconds per million)"),
    MapPlacementMethod("tsne", "t-SNE of the representatives",
                       "a neighbour-preserving layout of the representatives, each leaf's items around its "
                       "representative (openTSNE)", LAYOUT_EXTRA, tsne_available),
)


def map_placement(method: str) -> MapPlacementMethod:
    for m in MAP_PLACEMENTS:
        if m.id == method:
            return m
    raise ValueError(f"no placement {method!r}: one of {', '.join(m.id for m in MAP_PLACEMENTS)}")


def tsne_entry_name(cap: int = TSNE_CAP, fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED) -> str:
    return TSNE_ENTRY.format(cap=cap, fit=fit_items, seed=seed)


def placed_map(reader: NodeReader, method: str = "pca", *, fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED,
               block_leaves: int = BLOCK_LEAVES, cap: int = TSNE_CAP,
               on_picture: Callable[[MapPicture], None] | None = None, progress: ProgressCallback | None = None,
               cancel: threading.Event | None = None, use_cache: bool = True) -> MapPicture:
    """Every item placed by ``method`` (module docstring); pictures on the way as progressive.py hands them."""
    if map_placement(method).id == "pca":
        return progressive_placement(reader, fit_items=fit_items, seed=seed, block_leaves=block_leaves,
                                     on_picture=on_picture, progress=progress, cancel=cancel, use_cache=use_cache)
    from ecpfs_viewer.model.diagnostics.embedding_map.tsne import _open_tsne

    _open_tsne()  # refused at once, before any reading, when openTSNE is not installed
    name = tsne_entry_name(cap, fit_items, seed)
    if use_cache:
        kept = _kept(reader, tree_inputs(reader, cancel), name)
        if kept is not None and isinstance(kept.placement.projection, LayoutProjection):
            return kept
    made: list[tuple[LayoutProjection, Stamps | None]] = []

    def layout_for(shown: MapPicture) -> LayoutProjection:
        if not made:
            made.append(lay_out(reader, shown.placement.projection, cap=cap, progress=progress, cancel=cancel))
        return made[0][0]

    def picture(shown: MapPicture) -> None:
        if on_picture is None:
            return
        if not made:  # the layout takes tens of seconds at thousands of leaves: the PCA picture meanwhile
            on_picture(replace(shown, stand_in=TSNE_STAND_IN))
        on_picture(replace(shown, placement=apply_layout(layout_for(shown), shown.placement)))

    done = progressive_placement(reader, fit_items=fit_items, seed=seed, block_leaves=block_leaves,
                                 on_picture=picture, progress=progress, cancel=cancel, use_cache=use_cache)
    if not made and on_picture is not None:  # no picture on the way (the PCA answered whole from the cache)
        on_picture(replace(done, stand_in=TSNE_STAND_IN))
    placement = apply_layout(layout_for(done), done.placement)
    pca_entry = reader.opened.cache.open_entry(entry_name(fit_items, seed)) if not done.placement.unplaced else None
    if pca_entry is not None:
        pca_entry[0].close()  # its stamps only
    stamps = Stamps.joined([made[0][1], pca_entry[1] if pca_entry is not None else None])
    if stamps is not None and not placement.unplaced:
        reader.opened.cache.save(name, placement_writer(placement), stamps)
    return replace(done, placement=placement)
