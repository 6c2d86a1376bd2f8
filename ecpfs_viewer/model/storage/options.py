"""How to reach a remote store: the options the CLI, the Open URL dialog and the opened store share.

Their own module so that opening a store, the remote store and its clients all read them without
importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("timeout must be positive")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
