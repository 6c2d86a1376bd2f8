"""zarr-python's consolidated metadata: the documents of a group's descendants stored inside the
group's own ``zarr.json`` (``consolidated_metadata.metadata``), so they need no request each.

Believed only within the caps: at most ``Limits.max_listed_chunks`` entries are taken (like a
listing cut at that length), each a JSON object with a ``node_type``, none larger than a
metadata document may be; anything else in it is ignored, never an error.
"""

from __future__ import annotations

import json

from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage.opening import join_key


def consolidated_documents(raw: bytes, prefix: str = "") -> dict[str, bytes]:
    """key -> zarr.json bytes of every descendant a group document consolidates (keys below prefix)."""
    if b"consolidated_metadata" not in raw:
        return {}
    try:
        document = parse_json(raw, join_key(prefix, "zarr.json"))
        entries = (document.get("consolidated_metadata") or {}).get("metadata") or {}
    except (ValueError, AttributeError):
        return {}
    if not isinstance(entries, dict):
        return {}
    limits = current_limits()
    found: dict[str, bytes] = {}
    for path in sorted(entries)[:limits.max_listed_chunks]:
        entry = entries[path]
        if not isinstance(path, str) or not path or not isinstance(entry, dict) or "node_type" not in entry:
            continue
        document = json.dumps(entry).encode()
        if len(document) <= limits.max_metadata_bytes:
            found[join_key(prefix, path.strip("/"), "zarr.json")] = document
    return found
