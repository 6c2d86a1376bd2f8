"""How to reach a remote store: the options the CLI, the Open URL dialog and the opened store share.

Their own module so that opening a store, the remote store and its clients all read them without
importing one another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

#: storage option keys whose values are secrets: never remembered, shown or put in an identity
SECRET_KEY_RE = re.compile(r"pass|secret|token|key|credential|auth", re.IGNORECASE)


@dataclass(frozen=True)
class RemoteOptions:
    """How to reach a remote store; the same fields as the CLI options and the Open URL dialog."""

    endpoint: str | None = None  # e.g. http://127.0.0.1:9000 for MinIO, moto or another S3 clone
    anon: bool = False  # public bucket: send unsigned requests, look for no credentials
    region: str | None = None
    timeout_s: float = 30.0  # per request, retries included
    # concurrent requests per opened store: object stores serve thousands; 128 halves the round
    # trips of a level's 8,000 documents against 64
    max_in_flight: int = 128
    # fsspec stores: (KEY, VALUE) as typed (--storage-option KEY=VALUE, the Open URL dialog's table);
    # VALUE is read as JSON when it parses (2222, true, ["u", "p"]), else as text; PROTOCOL.KEY
    # gives the option to one layer of a chain (simplecache.cache_storage=DIR)
    storage_options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # remembered options come back from JSON as lists
        object.__setattr__(self, "storage_options", tuple((str(k), str(v)) for k, v in self.storage_options))
        if any(not key.strip() for key, _value in self.storage_options):
            raise ValueError("a storage option needs a name (KEY=VALUE)")
        if self.timeout_s <= 0:
            raise ValueError("timeout must be positive")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")

    def remembered(self) -> RemoteOptions:
        """These options without secret values (a password typed once is not written to the settings)."""
        return replace(self, storage_options=tuple((k, "") if SECRET_KEY_RE.search(k) else (k, v)
                                                   for k, v in self.storage_options))

    def identity(self) -> str:
        """What, besides the URL, names the store these options reach (secrets left out)."""
        named = ",".join(f"{k}={v}" for k, v in sorted(self.storage_options) if not SECRET_KEY_RE.search(k))
        return f"endpoint={self.endpoint}" + (f" options={named}" if named else "")
