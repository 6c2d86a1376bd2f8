"""What the cache folder keeps of an ecpfs index, and the documents whose state stands for the index's.

An index is fingerprinted from the documents read to open it: the root, ``info`` (its group,
each scalar's metadata and value), ``index_root`` and each level's group document. Rebuilding an
index, or inserting into it (``total_items`` and ``next_item_id`` change), changes them. Of a
remote index the small documents (every ``zarr.json`` and the leaves' and nodes' id arrays) are
then answered from the cache folder, with no request, until the fingerprint changes; those the
root's consolidated metadata holds are taken from it.
"""

from __future__ import annotations

from ecpfs_viewer.model.ecpfs.paths import MAX_FINGERPRINT_LEVELS, fingerprint_keys
from ecpfs_viewer.model.storage.counted_io import is_metadata_key
from ecpfs_viewer.model.storage.disk_cache import DocumentCache, StoreCache
from ecpfs_viewer.model.storage.fingerprint import store_cache, store_identity
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.zarrtree.consolidated import consolidated_documents
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def keeps_document(key: str) -> bool:
    """Whether a remote index's key is kept on disk: metadata, and the id arrays' chunks (small)."""
    return is_metadata_key(key) or "/item_ids/c" in key or "/node_ids/c" in key


def attach_cache(h: Hierarchy) -> StoreCache | None:
    """The cache entries of the index h shows, fingerprinted now (once per opened store); None
    when nothing of it may be kept (not an index, or no fingerprint).

    A remote index's small documents are read from the cache folder from now on, until a refresh;
    the fingerprint's own documents are read fresh, once (a failed one fails the read that wants it)."""
    store = h.store
    if store.disk is not None or store.fingerprint_tried or store_identity(store) is None:
        return store.disk
    try:
        levels = int(h.read_scalar("info/levels"))
    except Exception:  # not an index (or info/levels unreadable): its opening says why, not this
        return None
    if not 1 <= levels <= MAX_FINGERPRINT_LEVELS:
        return None
    store.fingerprint_tried = True  # a stalled document costs one timeout per store, not one per call
    cache, read = store_cache(store, fingerprint_keys(levels))
    store.disk = cache
    if cache is not None:
        cache.fit()
    if store.kind == "remote":
        documents = DocumentCache(cache, keeps_document)
        documents.seed(read)
        store.zarr_store.documents = documents
        h.cache(_Detach).store = store
    return cache


class _Detach:
    """Kept beside a hierarchy whose store reads from the cache folder: a refresh (F5) means ask
    the server, so it turns the cache off for the rest of that store's life."""

    def __init__(self) -> None:
        self.store: OpenedStore | None = None

    def forget(self, path: str, /) -> None:
        if self.store is not None:
            self.store.zarr_store.documents = None
            self.store.disk = None
            self.store = None


def seed_consolidated(h: Hierarchy) -> int:
    """Answer the documents the root's consolidated metadata holds from it, with no request each
    (model/zarrtree/consolidated.py caps it); how many it holds."""
    raw = h.root().raw
    found = consolidated_documents(raw) if raw is not None else {}
    if found:
        documents = h.store.zarr_store.documents
        if documents is None:
            documents = h.store.zarr_store.documents = DocumentCache(None, keeps_document)
        documents.seeded.update(found)
    return len(found)
