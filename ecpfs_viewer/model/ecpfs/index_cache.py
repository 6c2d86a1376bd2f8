"""What the cache folder keeps of an ecpfs index, and the documents whose state stands for the index's.

An index is fingerprinted from the documents read to open it: the root, ``info`` (its group,
each scalar's metadata and value), ``index_root`` and each level's group document; the
fingerprint names its entries. That is not enough to trust them (an rsync of a rebuilt index
swaps leaves under unchanged root documents), so every entry also carries the stamps of the
documents it was derived from and is answered only while they are unchanged (:class:`IndexCache`).
A remote index whose store lists objects with their validators (S3, GCS, Azure) is stamped by
listing (model/storage/remote_stamps.py: about a thousand objects per request); one on a plain
HTTP server by asking for the few objects an answer depends on (model/ecpfs/http_stamps.py), its
documents not kept (proving one unchanged costs the request that reads it); an fsspec store, or
a server that sends no validators, keeps nothing across processes. Of a remote index the
documents the root's consolidated metadata holds are taken from it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, BinaryIO

from ecpfs_viewer.model.ecpfs.http_stamps import KIND as HTTP_KIND
from ecpfs_viewer.model.ecpfs.http_stamps import HttpStamper, reads_validators
from ecpfs_viewer.model.ecpfs.paths import MAX_FINGERPRINT_LEVELS, fingerprint_keys, level_path, parse_node_path
from ecpfs_viewer.model.storage.counted_io import is_metadata_key
from ecpfs_viewer.model.storage.disk_cache import DocumentCache, EntryPart, StoreCache
from ecpfs_viewer.model.storage.fingerprint import store_cache, store_identity
from ecpfs_viewer.model.storage.opening import join_key
from ecpfs_viewer.model.storage.read_stamps import ReadStamps
from ecpfs_viewer.model.storage.remote_stamps import Lister, RemoteStamper, lists_validators
from ecpfs_viewer.model.storage.stamped_documents import StampedDocuments
from ecpfs_viewer.model.storage.stamps import Stamps, frame_parts, read_framed_stamps, stamp_local, unframe_entry
from ecpfs_viewer.model.storage.zip_stamps import archive_directory, members_unchanged, stamp_members
from ecpfs_viewer.model.zarrtree.array_batch import BeforeChunks
from ecpfs_viewer.model.zarrtree.consolidated import consolidated_documents
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.opening import OpenedStore


def keeps_document(key: str) -> bool:
    """Whether a remote index's key is kept on disk: metadata, and the id arrays' chunks (small)."""
    return is_metadata_key(key) or "/item_ids/c" in key or "/node_ids/c" in key


def keeps_nothing(store: OpenedStore) -> bool:
    """Whether nothing of this store may be kept across processes: a remote store that neither
    lists objects with their validators nor answers each with them (an fsspec store)."""
    return store.kind == "remote" and not lists_validators(store) and not reads_validators(store)


#: Remote stores whose documents came whole but with neither an ETag nor a Last-Modified.
_WITHOUT_VALIDATORS: weakref.WeakSet[OpenedStore] = weakref.WeakSet()


def cache_note(store: OpenedStore) -> str | None:
    """Why nothing of a remote index is kept for a later run, said under its answer: its server
    sends no validators (None otherwise; a document that could not be read says so itself)."""
    if store in _WITHOUT_VALIDATORS:
        return ("nothing of this index is kept for a later run: the server sends neither an ETag nor a "
                "Last-Modified for its documents")
    return None


def attach_cache(h: Hierarchy) -> StoreCache | None:
    """The cache entries of the index h shows, fingerprinted now (once per opened store); None
    when nothing of it may be kept (not an index, no fingerprint, or :func:`keeps_nothing`).

    The fingerprint (the root documents) only names the entries; each entry is checked on use
    against the stamps of the documents it was derived from (:class:`IndexCache`)."""
    store = h.store
    if store.disk is not None or store.fingerprint_tried or keeps_nothing(store) or store_identity(store) is None:
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
    if cache is None and store.kind == "remote" and not any(isinstance(v, Exception) for v in read.values()):
        _WITHOUT_VALIDATORS.add(store)
    if cache is not None:
        cache.fit()
        if lists_validators(store):  # an object store: its documents kept, each with its listed stamp
            documents = StampedDocuments(cache, keeps_document, Lister(store))
            if store.zarr_store.documents is not None:
                documents.seeded.update(store.zarr_store.documents.seeded)
            store.zarr_store.documents = documents
            h.cache(_Relist).documents = documents
    return cache


class _Relist:
    """Kept beside a hierarchy whose store answers documents from the cache folder: a refresh
    (F5) means ask the server, so every document is checked against a new listing."""

    def __init__(self) -> None:
        self.documents: StampedDocuments | None = None

    def forget(self, path: str, /) -> None:
        if self.documents is not None:
            self.documents.relist()


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


class IndexCache:
    """The one place for what is cached about an opened index: entries in the cache folder under
    the index's identity and fingerprint, each carrying the stamps of the documents it was derived
    from (model/storage/stamps.py) and answered only while they are unchanged.

    A local folder is stamped file by file, a zip member by member from its central directory
    (model/storage/zip_stamps.py), an object store by listing (model/storage/remote_stamps.py), a
    plain HTTP store by asking for the objects (model/ecpfs/http_stamps.py); an fsspec store keeps
    nothing across processes (:func:`keeps_nothing`)."""

    def __init__(self, h: Hierarchy) -> None:
        # kept beside the hierarchy (Hierarchy.cache): a strong reference back would make a cycle,
        # and an index closed by the window would wait for a full collection to be freed
        self._hierarchy = weakref.ref(h)
        self.store = h.store
        self._remote: RemoteStamper | HttpStamper | None = None

    def _stamper(self) -> RemoteStamper | HttpStamper | None:
        if self._remote is None and self.store.kind == "remote":
            if lists_validators(self.store):
                self._remote = RemoteStamper(self.store)
            elif reads_validators(self.store):
                self._remote = HttpStamper(self.store, self._level_nodes, self._hold)
        return self._remote

    def forget_stamps(self) -> None:
        """Ask the server again for what proves an entry unchanged, and for the documents held
        from the last stamps (a refresh)."""
        self._remote = None
        documents = self.store.zarr_store.documents
        if documents is not None:
            documents.let_go()

    def _level_nodes(self, level: int) -> list[int]:
        """The node ids of a level as the hierarchy lists (or derives) them."""
        found = (parse_node_path(node.path) for node in self.hierarchy.children(level_path(level)))
        return sorted(place[1] for place in found if place is not None and place[0] == level)

    def _hold(self, key: str, data: bytes) -> None:
        """Have the next read of key answered with the bytes just stamped (DocumentCache.hold)."""
        wrapper = self.store.zarr_store
        if wrapper.documents is None:
            wrapper.documents = DocumentCache(None, keeps_document)
        wrapper.documents.hold(key, data)

    @property
    def hierarchy(self) -> Hierarchy:
        found = self._hierarchy()
        if found is None:
            raise RuntimeError("the index this cache belongs to was closed")
        return found

    @property
    def disk(self) -> StoreCache | None:
        return attach_cache(self.hierarchy)

    @property
    def stamps_each_file(self) -> bool:
        """Whether a file is stamped with one call of the system (a local folder): a pass over many
        folders stamps the files it reads rather than listing each folder below (six listings a leaf,
        two thirds of a leaf's stamps)."""
        store = self.store
        return store.kind == "local" and store.local_path is not None

    @contextlib.contextmanager
    def stamped_files(self, files: Sequence[tuple[str, int]], into: list[Stamps | None]) -> Iterator[ReadStamps | None]:
        """Stamp the (path, owner) files read in this context, into ``into``: in a local folder each
        right before it is read (model/storage/read_stamps.py; more may be expected meanwhile, as store
        keys, through the ReadStamps given), their stamps added when the context ends without an
        error (a read that failed is read again, and stamped again, or its answer is never made);
        elsewhere all of them now, before any is read (None given)."""
        if not self.stamps_each_file:
            into.append(self.stamp(files, walk=False))
            yield None
            return
        store = self.store
        assert store.local_path is not None  # stamps_each_file
        reads = ReadStamps(str(store.local_path))
        reads.expect((store.key(path), owner) for path, owner in files)
        with reads.recording():
            yield reads
        into.append(reads.stamps())

    @contextlib.contextmanager
    def stamped_reads(self, arrays: Sequence[tuple[str, int]], into: list[Stamps | None],
                      folders: Sequence[tuple[str, int]] | None = None) -> Iterator[BeforeChunks | None]:
        """Stamp (path, owner) arrays read in this context, into ``into``. In a local folder the files
        read are stamped (:meth:`stamped_files`): each array's document, the chunks its document names
        once the hook given (a batch read's ``before_chunks``) is told them (absent ones too), and the
        folder of an array read another way, when told. Elsewhere ``folders`` (default: the arrays'
        own) are stamped now, every file below each, and no hook is given."""
        if not self.stamps_each_file:
            into.append(self.stamp(arrays if folders is None else folders))
            yield None
            return
        store, owners = self.store, dict(arrays)
        others: list[Stamps | None] = []
        with self.stamped_files([(join_key(path, "zarr.json"), owner) for path, owner in arrays], into) as reads:
            assert reads is not None  # stamps_each_file

            def before_chunks(chunks: list[tuple[str, str]], unbatched: list[str]) -> None:
                reads.expect((store.key(chunk), owners[array]) for array, chunk in chunks)
                if unbatched:
                    others.append(self.stamp([(array, owners[array]) for array in unbatched]))

            yield before_chunks
        into.extend(others)

    def stamp(self, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps | None:
        """Stamps of the (path, owner) pairs (paths below the Zarr root), taken before reading
        them; None when this store cannot be stamped (nothing derived from it is kept)."""
        store = self.store
        if store.kind == "local" and store.local_path is not None:
            return stamp_local(str(store.local_path), [(store.key(path), owner) for path, owner in groups], walk=walk)
        directory = archive_directory(store.archive_sizes) if store.kind == "zip" else None
        if directory is not None:
            return stamp_members(directory, [(store.key(path), owner) for path, owner in groups], walk=walk)
        remote = self._stamper()
        if isinstance(remote, HttpStamper):
            try:  # the stamper names its objects from Zarr paths (a level's nodes, an array's chunks)
                return remote.stamp(groups, walk=walk)
            except Exception:  # a request that failed: what is read now is not kept
                return None
        if remote is not None:
            try:
                return remote.stamp([(store.key(path), owner) for path, owner in groups], walk=walk)
            except Exception:  # a listing that failed: what is read now is not kept
                return None
        return None

    def unchanged(self, stamps: Stamps, owners: Sequence[int] | None = None) -> bool:
        """Whether the documents of the given owners (all when None) are as they were stamped."""
        store = self.store
        if stamps.kind == "local" and store.kind == "local" and store.local_path is not None:
            return stamps.unchanged(str(store.local_path), owners)
        directory = archive_directory(store.archive_sizes) if store.kind == "zip" else None
        if stamps.kind == "zip" and directory is not None:
            return members_unchanged(directory, stamps, owners)
        remote = self._stamper()
        if ((stamps.kind == "remote" and isinstance(remote, RemoteStamper))
                or (stamps.kind == HTTP_KIND and isinstance(remote, HttpStamper))):
            return remote.unchanged(stamps, owners)
        return False

    def load(self, name: str) -> tuple[bytes, Stamps] | None:
        """An entry and what it was derived from (not checked yet: the caller knows which owners
        its answer depends on); None when there is none."""
        disk = self.disk
        raw = None if disk is None else disk.read(name)
        return None if raw is None else unframe_entry(raw)

    def open_entry(self, name: str) -> tuple[BinaryIO, Stamps] | None:
        """An entry's file left where its data starts, and what the entry was derived from (not checked
        yet); the caller closes the file. For an entry too large to hold twice: a 10M-item map's
        placement read whole, cut from its stamps and parsed was 560 MB at the second opening's peak."""
        disk = self.disk
        handle = None if disk is None else disk.open(name)
        if handle is None:
            return None
        stamps = read_framed_stamps(handle)
        if stamps is None:
            handle.close()
            return None
        return handle, stamps

    def load_checked(self, name: str) -> bytes | None:
        """An entry whose every document is unchanged, else None."""
        found = self.load(name)
        if found is None or not self.unchanged(found[1]):
            return None
        return found[0]

    def save(self, name: str, data: EntryPart, stamps: Stamps | Sequence[Stamps] | None) -> None:
        """Keep an entry with what it was derived from (nothing without stamps or a cache folder): the
        stamps of one read, or of several (:meth:`Stamps.joinable`), joined as they are written."""
        disk = self.disk
        if disk is not None and stamps is not None:
            disk.write(name, *frame_parts(data, stamps))


def index_cache(h: Hierarchy) -> IndexCache:
    """The cache of the index h shows (one per hierarchy)."""
    found = h.cache(_IndexCacheSlot)
    if found.cache is None:
        found.cache = IndexCache(h)
    return found.cache


class _IndexCacheSlot:
    def __init__(self) -> None:
        self.cache: IndexCache | None = None

    def forget(self, path: str, /) -> None:
        """Kept across a refresh (entries are checked on every use), but what proves them
        unchanged is asked for again (a plain HTTP server's objects: model/ecpfs/http_stamps.py)."""
        if self.cache is not None:
            self.cache.forget_stamps()
