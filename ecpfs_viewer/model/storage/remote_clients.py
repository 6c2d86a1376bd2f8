"""The obstore client for a URL: one per cloud (S3, GCS, Azure, plain HTTP), from RemoteOptions.

Credentials are left to each client's own discovery (environment, files, instance metadata) and
are never read into a message. Two cases need help from here: an emulator reached over plain
``http://`` on GCS (no token can be had for it, and none should travel unencrypted), and an Azure
endpoint that names its account only in the endpoint URL (Azurite's
``http://127.0.0.1:10000/devstoreaccount1``).
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.storage import schemes

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.options import RemoteOptions

#: Environment variables through which obstore's GCS client is given credentials explicitly.
GCS_CREDENTIAL_VARS = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH",
                       "GOOGLE_SERVICE_ACCOUNT_KEY", "GOOGLE_BEARER_TOKEN")
AZURE_ACCOUNT_VAR = "AZURE_STORAGE_ACCOUNT_NAME"
_BUCKET_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_AZURE_HOST_RE = re.compile(r"^([a-z0-9]+)\.(?:blob|dfs)\.", re.IGNORECASE)


class RemoteOpenError(UserError):
    """A URL could not be turned into a store (unknown scheme, missing extra, bad options)."""


def _client_options(options: RemoteOptions, allow_http: bool) -> dict[str, Any]:
    return {"timeout": timedelta(seconds=options.timeout_s),
            "connect_timeout": timedelta(seconds=min(options.timeout_s, 10.0)),
            "allow_http": allow_http}


def _retry_config(options: RemoteOptions) -> dict[str, Any]:
    # No retries inside the client: BoundedStore retries (model/storage/remote.py), so that every failure
    # reaches the limit on requests in flight, and none is hidden inside one long attempt.
    return {"max_retries": 0, "retry_timeout": timedelta(seconds=options.timeout_s),
            "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2),
                        "base": 2}}


def _s3_credentials(options: RemoteOptions) -> Any:
    """A boto3 credential provider when a profile is in use and boto3 is installed, else None.

    obstore itself reads AWS_* variables, web identity and instance metadata; profiles in
    ~/.aws need boto3.
    """
    if options.anon or os.environ.get("AWS_ACCESS_KEY_ID") or not (
            os.environ.get("AWS_PROFILE") or os.path.exists(os.path.expanduser("~/.aws/credentials"))):
        return None
    try:
        import boto3
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        return None
    try:
        return Boto3CredentialProvider(boto3.Session())
    except Exception:  # no usable profile: fall back to obstore's own discovery
        return None


def _s3_config(options: RemoteOptions, endpoint: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {"skip_signature": True} if options.anon else {}
    if endpoint:
        config["endpoint"] = endpoint
        config["virtual_hosted_style_request"] = False
    region = options.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    config["region"] = region or "us-east-1"
    return config


def _gcs_config(options: RemoteOptions, endpoint: str | None) -> dict[str, Any]:
    """GCS settings. Over an ``http://`` endpoint (an emulator such as fake-gcs-server) requests
    go unsigned unless credentials are named in the environment: without them the client would
    ask the instance metadata server for a token, which no emulator needs and which must not be
    sent in the clear."""
    unsigned = options.anon or bool(endpoint and endpoint.lower().startswith("http://")
                                    and not any(os.environ.get(name) for name in GCS_CREDENTIAL_VARS))
    config: dict[str, Any] = {"skip_signature": True} if unsigned else {}
    if endpoint:
        config["base_url"] = endpoint.rstrip("/")
    return config


def azure_account(endpoint: str | None) -> str | None:
    """The storage account a request will name: AZURE_STORAGE_ACCOUNT_NAME, else the endpoint's
    (``https://ACCOUNT.blob.core.windows.net``, or an emulator's ``http://HOST:PORT/ACCOUNT``)."""
    named = os.environ.get(AZURE_ACCOUNT_VAR, "").strip()
    if named or not endpoint:
        return named or None
    parts = urlsplit(endpoint)
    host = _AZURE_HOST_RE.match(parts.hostname or "")
    if host:
        return host.group(1)
    first = parts.path.strip("/").split("/", 1)[0]
    return first or None


def _azure_config(options: RemoteOptions, url: str, endpoint: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {"skip_signature": True} if options.anon else {}
    if endpoint:
        config["endpoint"] = endpoint.rstrip("/")
    account = azure_account(endpoint)
    if account is None:
        raise RemoteOpenError(f"{url}: no Azure storage account: set {AZURE_ACCOUNT_VAR}, or give --endpoint "
                              "https://ACCOUNT.blob.core.windows.net")
    config["account_name"] = account
    return config


def make_object_store(url: str, options: RemoteOptions) -> Any:
    """The obstore store for a URL (no request is made here)."""
    from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    entry = schemes.lookup(scheme)
    family = entry.family if entry is not None and entry.opener == "obstore" else None
    bucket, prefix = parts.netloc, parts.path.strip("/") or None
    endpoint = options.endpoint.strip() if options.endpoint else None
    allow_http = url.lower().startswith("http://") or bool(endpoint and endpoint.lower().startswith("http://"))
    common: dict[str, Any] = {"client_options": _client_options(options, allow_http),
                              "retry_config": _retry_config(options)}
    if family == "http":
        return HTTPStore.from_url(url.rstrip("/"), **common)
    if not bucket or not _BUCKET_RE.match(bucket):
        raise RemoteOpenError(f"{url}: expected {scheme}://BUCKET/PATH")
    if family == "s3":
        provider = _s3_credentials(options)
        if provider is not None:
            common["credential_provider"] = provider
        return S3Store(bucket, prefix=prefix, **_s3_config(options, endpoint), **common)
    if family == "gcs":
        return GCSStore(bucket, prefix=prefix, **_gcs_config(options, endpoint), **common)
    if family == "azure":
        return AzureStore.from_url(url.rstrip("/"), **_azure_config(options, url, endpoint), **common)
    raise RemoteOpenError(f"{url}: unsupported URL scheme '{scheme}'")
