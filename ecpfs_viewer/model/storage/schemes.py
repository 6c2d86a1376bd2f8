"""The one table of remote URL schemes: which client opens each, and what each can do.

Opening a URL, the obstore clients, the command line's help, the Open URL dialog and its hints all
read this table; a scheme is added here and nowhere else. obstore serves the object stores and
plain HTTP (``s3``, ``gs``, ``az``, ``http(s)``); every other URL, and any fsspec chain
(``simplecache::ftp://…``), goes to zarr's FsspecStore (the ``fsspec`` extra). Imports nothing of
zarr or of either client: the command line registers its options from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Opener = Literal["obstore", "fsspec"]

OBSTORE_EXTRA_HINT = "install the remote extra: pip install 'ecpfs-viewer[remote]'"
FSSPEC_EXTRA_HINT = "install the fsspec extra: pip install 'ecpfs-viewer[fsspec]'"

_URL_RE = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)(?:://|::)")


@dataclass(frozen=True)
class Scheme:
    """One URL scheme (with its aliases) and how it is reached."""

    names: tuple[str, ...]
    opener: Opener
    family: str  # "s3", "gcs", "azure", "http" (obstore's client), or the fsspec protocol
    lists: bool = True  # the server lists folders (a static web server answers 404 for one)
    cloud: bool = False  # --endpoint, --region and --anon mean something for it
    # several requests may share the client at once (an async client, or a thread-safe one); an
    # fsspec client that is neither (ftplib, a cache layer writing its files) is asked one at a time
    concurrent: bool = True
    credentials: str = "the server refused the request; check the URL or use --anon"


SCHEMES: tuple[Scheme, ...] = (
    Scheme(("s3", "s3a"), "obstore", "s3", cloud=True,
           credentials="check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE with boto3 installed) "
                       "and --region, or use --anon for a public bucket"),
    Scheme(("gs", "gcs"), "obstore", "gcs", cloud=True,
           credentials="check GOOGLE_APPLICATION_CREDENTIALS (a service account file) or GOOGLE_SERVICE_ACCOUNT_KEY, "
                       "or use --anon for a public bucket"),
    Scheme(("az", "azure", "abfs", "abfss"), "obstore", "azure", cloud=True,
           credentials="check AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN, "
                       "or use --anon for a public container"),
    Scheme(("http", "https"), "obstore", "http", lists=False),
    # fsspec: those named are the ones tested or documented; any other protocol fsspec knows opens too
    Scheme(("ftp",), "fsspec", "ftp", concurrent=False,
           credentials="check --storage-option username=… password=…"),
    Scheme(("sftp", "ssh"), "fsspec", "sftp", credentials="check --storage-option username=… and a key or password"),
    Scheme(("webdav",), "fsspec", "webdav", credentials="check --storage-option auth=[\"USER\", \"PASSWORD\"]"),
    Scheme(("hf",), "fsspec", "hf", credentials="check HF_TOKEN or --storage-option token=…"),
    Scheme(("reference",), "fsspec", "reference"),
    Scheme(("memory",), "fsspec", "memory"),
    Scheme(("simplecache", "blockcache", "filecache"), "fsspec", "cache", concurrent=False),
)

_BY_NAME = {name: scheme for scheme in SCHEMES for name in scheme.names}
#: the fsspec schemes shown in help texts (any other fsspec protocol works as well)
FSSPEC_EXAMPLES = ("sftp://", "ftp://", "webdav://", "hf://", "reference://", "memory://", "simplecache::…")


def scheme_of(location: str) -> str | None:
    """The (lower-case) scheme a URL or fsspec chain starts with; None for a path or file://."""
    match = _URL_RE.match(location.strip())
    if match is None:
        return None
    scheme = match.group("scheme").lower()
    return None if scheme == "file" and "::" not in location else scheme


def is_url(location: str) -> bool:
    """True for anything opened by a remote client (a URL, an fsspec chain), not a local path."""
    return scheme_of(location) is not None


def chain_schemes(url: str) -> list[str]:
    """The schemes of an fsspec chain, outermost first (``simplecache::ftp://h/x`` → simplecache, ftp)."""
    found = []
    for bit in url.strip().split("::"):
        match = _URL_RE.match(bit + ("" if "://" in bit else "::"))
        found.append(match.group("scheme").lower() if match else "file")
    return found


def lookup(scheme: str) -> Scheme | None:
    """The table's entry for a scheme name (an alias included); None for one it does not name."""
    return _BY_NAME.get(scheme.lower())


def opener_for(url: str) -> Opener:
    """obstore for a single s3/gs/az/http(s) URL, fsspec for a chain or any other scheme."""
    if "::" in url:
        return "fsspec"
    entry = lookup(scheme_of(url) or "")
    return entry.opener if entry is not None else "fsspec"


def target(url: str) -> Scheme | None:
    """The entry of the store a URL reads from in the end: the last scheme of a chain."""
    return lookup(chain_schemes(url)[-1])


def is_cloud_url(url: str) -> bool:
    """An object-store URL (s3, gs, az …) opened by obstore: endpoint, region and anonymous access apply."""
    entry = lookup(scheme_of(url) or "")
    return entry is not None and entry.cloud and opener_for(url) == "obstore"


def obstore_names() -> tuple[str, ...]:
    return tuple(name for scheme in SCHEMES if scheme.opener == "obstore" for name in scheme.names)


def describe() -> str:
    """'s3://, gs://, az://, http(s)://; fsspec URLs and chains (sftp://, …) with the fsspec extra'."""
    return ("s3://, gs://, az://, http(s)://; with the fsspec extra any fsspec URL or chain: "
            + ", ".join(FSSPEC_EXAMPLES))
