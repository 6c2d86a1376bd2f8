"""The caps that keep memory and time bounded on any store a user can be handed.

Metadata can declare anything (a 10^15-row array, a 1 GiB zarr.json inside a 1 MB zip); what is
read is bounded by these caps instead. They live here, in one place: change one for a session with
an environment variable (in MB), or for a library call with :func:`set_limits`::

    ECPFS_VIEWER_MAX_METADATA_MB=256 ecpfs-viewer check big.zarr

    from ecpfs_viewer.model.limits import Limits, set_limits
    set_limits(Limits(max_chunk_bytes=1 << 30))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

_MB = 1 << 20

#: The environment variable (a number of MB) that sets each cap, by field name.
ENV_VARS = {
    "max_metadata_bytes": "ECPFS_VIEWER_MAX_METADATA_MB",
    "max_json_values": "ECPFS_VIEWER_MAX_JSON_VALUES",  # a count, not MB
    "max_json_depth": "ECPFS_VIEWER_MAX_JSON_DEPTH",  # a count, not MB
    "max_chunk_bytes": "ECPFS_VIEWER_MAX_CHUNK_MB",
    "max_decoded_chunk_bytes": "ECPFS_VIEWER_MAX_DECODED_CHUNK_MB",
    "max_decoded_read_bytes": "ECPFS_VIEWER_MAX_DECODED_READ_MB",
    "max_chunks_per_read": "ECPFS_VIEWER_MAX_CHUNKS_PER_READ",  # a count, not MB
    "max_listed_chunks": "ECPFS_VIEWER_MAX_LISTED_CHUNKS",  # a count, not MB
    "max_shard_index_bytes": "ECPFS_VIEWER_MAX_SHARD_INDEX_MB",
    "max_cache_bytes": "ECPFS_VIEWER_MAX_CACHE_MB",
}


@dataclass(frozen=True)
class Limits:
    """Caps on what one read may cost; a read past a cap is refused with a message naming it."""

    #: One metadata document (zarr.json, .zarray, .zgroup, .zattrs, .zmetadata) as stored.
    max_metadata_bytes: int = 64 * _MB
    #: JSON values (objects, arrays, strings, numbers, literals) one document may hold: what parsing
    #: it costs is bounded by this, not by its bytes (64 MB of empty lists is 20 million objects).
    max_json_values: int = 1_000_000
    #: How deeply one JSON document may nest arrays and objects.
    max_json_depth: int = 128
    #: One stored object that is not metadata (a chunk or shard), as stored (or declared in a zip).
    max_chunk_bytes: int = 256 * _MB
    #: One chunk once decoded (its declared shape x item size): a selection touching a larger one is refused.
    max_decoded_chunk_bytes: int = 256 * _MB
    #: Memory one array read may need: its output plus the chunks decoded at once (whole, several at a time).
    max_decoded_read_bytes: int = 512 * _MB
    #: Chunks one array read may touch, present or not (zarr-python visits each one).
    max_chunks_per_read: int = 100_000
    #: Stored objects chunk statistics look at for one array (a listing longer than this is cut).
    max_listed_chunks: int = 1_000_000
    #: Shard indexes chunk statistics read for one array, in bytes in all; and one shard's declared
    #: index in any array read (zarr-python allocates it whole for every shard a read touches).
    max_shard_index_bytes: int = 64 * _MB
    #: What the cache folder may keep of all stores together (item maps, remote metadata); the
    #: least recently used entries are evicted past it.
    max_cache_bytes: int = 2048 * _MB

    def describe(self, name: str) -> str:
        """'the 64 MB cap (ECPFS_VIEWER_MAX_METADATA_MB)': for messages that refuse a read."""
        value = getattr(self, name)
        amount = f"{value / _MB:g} MB" if name.endswith("_bytes") else f"{value:,}"
        return f"the {amount} cap ({ENV_VARS[name]})"


def limits_from_env(environ: dict[str, str] | None = None) -> Limits:
    """The default Limits, with each cap whose environment variable holds a positive number replaced
    (MB for the byte caps, a plain count for the others)."""
    environ = dict(os.environ) if environ is None else environ
    values: dict[str, int] = {}
    for spec in fields(Limits):
        text = environ.get(ENV_VARS[spec.name], "").strip()
        if not text:
            continue
        try:
            mb = float(text)
        except ValueError:
            continue  # a malformed setting keeps the default rather than stopping every read
        if mb > 0:
            values[spec.name] = int(mb * _MB) if spec.name.endswith("_bytes") else int(mb)
    return Limits(**values)


_current: Limits | None = None


def current_limits() -> Limits:
    """The caps in force: those given to set_limits, else the defaults and environment (read once)."""
    global _current
    if _current is None:
        _current = limits_from_env()
    return _current


def set_limits(limits: Limits | None) -> None:
    """Use `limits` from now on in this process; None goes back to the defaults and environment."""
    global _current
    _current = limits
