"""Property-based fuzzing of a small index: every answer is right or says what could not be read.

Hypothesis mutates one stored file of a small two-level index (a ``zarr.json``, a chunk, or the
index at the end of a shard of the sharded variant): bit flips, cuts, spliced and appended bytes,
JSON values set to hostile ones. Then ``info``, ``check --deep``, ``search --item`` and a node
page (the model functions the window's page calls) run on the mutant, and each must:

- end (pytest-timeout bounds a hang) with no traceback, an exit status of the contract, and no
  Python or numpy warning;
- stay within a memory bound (tracemalloc's peak: numpy and Python allocations);
- leave the store as it was, byte for byte;
- give an answer that is right or say what could not be read. "Right" is judged against a strict
  reference reader written here, independent of the app and of zarr-python: it knows only the
  layouts this index uses (``bytes`` then ``zstd``, and ``sharding_indexed`` of those with a
  ``crc32c`` index) and says an array is unreadable when anything about it is off. A search
  whose result rests on a node the reference cannot read must say so; a search that answers must
  give the true nearest items of the leaves it says it scanned; ``check --deep`` must not pass
  an index whose nodes the reference cannot read; a node page must not list ids it could not read.

The examples are seeded (derandomized) so CI runs the same ones; ``--fuzz-long --timeout 0`` runs
1,500 and shrinks a failure.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tracemalloc
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pytest
import zstandard
from command_runs import run  # tests/ is on sys.path (conftest)
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from index_factory import build_clustered_index, hierarchy  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.views.node_info import leaf_items, node_spread

ITEMS = 240
DIM = 8
#: tracemalloc's peak for one action on this index of a few KiB: a hostile chunk or document must
#: not make any of them allocate what it declares
PEAK_BYTES = 96 << 20
CONTRACT_CODES = {0, 1, 2}
UNSUPPORTED = object()  # a document the reference does not model: only the generic promises are judged


# -------------------------------------------------------------------------------- the two stores


def _shard_leaves(store: Path) -> None:
    """Rewrite every leaf's embeddings as one shard of inner chunks of 8 rows (zarr-python writes it)."""
    import zarr

    for leaf in sorted((store / "lvl_2").glob("node_*")):
        array = zarr.open_array(leaf / "embeddings", mode="r")
        values = np.asarray(array[...])
        attributes = dict(array.attrs)
        shutil.rmtree(leaf / "embeddings")
        rows = max(8, -(-values.shape[0] // 8) * 8)
        sharded = zarr.create_array(leaf / "embeddings", shape=values.shape, dtype=values.dtype, chunks=(8, DIM),
                                    shards=(rows, DIM), compressors=zarr.codecs.ZstdCodec(level=3), fill_value=0.0,
                                    attributes=attributes)
        sharded[...] = values


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    plain = build_clustered_index(tmp_path_factory.mktemp("plain"), ITEMS, DIM, clusters=6, levels=2,
                                  target_cluster_items=20)
    sharded = tmp_path_factory.mktemp("sharded") / "idx.zarr"
    shutil.copytree(plain, sharded)
    _shard_leaves(sharded)
    return {"plain": plain, "sharded": sharded}


# ------------------------------------------------------------------ a strict reference reader


class Unreadable(Exception):
    """The reference reader cannot read the array: the app must not answer from it."""


def _document(folder: Path) -> Any:
    try:
        return json.loads((folder / "zarr.json").read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise Unreadable(f"{folder}: {exc}") from exc


def _plain_chain(codecs: Any) -> bool:
    return (isinstance(codecs, list) and len(codecs) == 2 and codecs[0] == {"name": "bytes", "configuration":
            {"endian": "little"}} and isinstance(codecs[1], dict) and codecs[1].get("name") == "zstd")


def _zstd(raw: bytes, expected: int) -> bytes:
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        data = reader.read(expected + 1)
    except zstandard.ZstdError as exc:
        raise Unreadable(str(exc)) from exc
    if len(data) != expected:
        raise Unreadable(f"decodes to {len(data)} bytes, not {expected}")
    return data


def reference_array(folder: Path) -> np.ndarray | object:
    """The array stored in folder as this index's layouts define it, Unreadable, or UNSUPPORTED."""
    doc = _document(folder)
    if not isinstance(doc, dict) or doc.get("zarr_format") != 3 or doc.get("node_type") != "array":
        raise Unreadable(f"{folder}: not an array document")
    dtypes = {"float32": np.float32, "uint64": np.uint64, "int64": np.int64, "uint32": np.uint32}
    shape, dtype, grid = doc.get("shape"), dtypes.get(doc.get("data_type")), doc.get("chunk_grid")
    keys = {"name": "default", "configuration": {"separator": "/"}}
    if (not isinstance(shape, list) or len(shape) not in (1, 2) or dtype is None or not isinstance(grid, dict)
            or grid.get("name") != "regular" or doc.get("chunk_key_encoding") != keys
            or not all(type(n) is int and 0 <= n <= 100_000 for n in shape)):
        return UNSUPPORTED
    chunk_shape = (grid.get("configuration") or {}).get("chunk_shape")
    if (not isinstance(chunk_shape, list) or len(chunk_shape) != len(shape)
            or not all(type(n) is int and 0 < n <= 100_000 for n in chunk_shape)):
        return UNSUPPORTED
    fill = doc.get("fill_value")
    if type(fill) not in (int, float):
        return UNSUPPORTED
    codecs = doc.get("codecs")
    out = np.full(shape, fill, dtype=dtype)
    itemsize = np.dtype(dtype).itemsize
    if _plain_chain(codecs):
        for coords in np.ndindex(*(-(-s // c) for s, c in zip(shape, chunk_shape, strict=True))):
            path = folder / "c" / "/".join(map(str, coords))
            if not path.exists():
                continue
            raw = _zstd(path.read_bytes(), int(np.prod(chunk_shape)) * itemsize)
            chunk = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(chunk_shape)
            region = tuple(slice(i * c, min(s, (i + 1) * c))
                           for i, c, s in zip(coords, chunk_shape, shape, strict=True))
            out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
        return out
    if isinstance(codecs, list) and len(codecs) == 1 and isinstance(codecs[0], dict) \
            and codecs[0].get("name") == "sharding_indexed" and len(shape) == 2:
        return _sharded(folder, shape, chunk_shape, dtype, fill, codecs[0].get("configuration") or {})
    return UNSUPPORTED


def _sharded(folder: Path, shape: list[int], shard_shape: list[int], dtype: Any, fill: Any,
             config: dict[str, Any]) -> np.ndarray | object:
    inner = config.get("chunk_shape")
    if (not _plain_chain(config.get("codecs")) or config.get("index_location", "end") != "end"
            or config.get("index_codecs") != [{"name": "bytes", "configuration": {"endian": "little"}},
                                             {"name": "crc32c"}]
            or not isinstance(inner, list) or inner[1:] != shard_shape[1:] or not isinstance(inner[0], int)
            or inner[0] <= 0 or shard_shape[0] % inner[0]):
        return UNSUPPORTED
    out = np.full(shape, fill, dtype=dtype)
    rows_per_chunk, per_shard = inner[0], shard_shape[0] // inner[0]
    for shard in range(-(-shape[0] // shard_shape[0])):
        path = folder / "c" / str(shard) / "0"
        if not path.exists():
            continue
        data = path.read_bytes()
        index_bytes = per_shard * 16 + 4
        if len(data) < index_bytes:
            raise Unreadable(f"{path}: shorter than its index")
        index, checksum = data[-index_bytes:-4], data[-4:]
        if google_crc32c.value(index) != int.from_bytes(checksum, "little"):
            raise Unreadable(f"{path}: index checksum")
        entries = np.frombuffer(index, "<u8").reshape(per_shard, 2)
        for i, (offset, length) in enumerate(entries.tolist()):
            if offset == length == 2**64 - 1:
                continue
            if offset + length > len(data) - index_bytes:
                raise Unreadable(f"{path}: entry {i} points past its data")
            raw = _zstd(data[offset:offset + length], rows_per_chunk * shape[1] * np.dtype(dtype).itemsize)
            start = shard * shard_shape[0] + i * rows_per_chunk
            if start >= shape[0]:
                continue
            chunk = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(rows_per_chunk, shape[1])
            out[start:min(shape[0], start + rows_per_chunk)] = chunk[:min(shape[0], start + rows_per_chunk) - start]
    return out


def reference(folder: Path) -> np.ndarray | object:
    """reference_array, with Unreadable as a value."""
    try:
        return reference_array(folder)
    except Unreadable as exc:
        return exc


# ------------------------------------------------------------------------------- the mutations


@dataclass(frozen=True)
class Mutation:
    store: str  # plain or sharded
    kind: str  # document, chunk or shard_index
    target: int  # which file of that kind (modulo how many there are)
    operation: str
    position: int  # where in the file (modulo its length)
    payload: bytes


def _files(store: Path, kind: str) -> list[Path]:
    every = sorted(p for p in store.rglob("*") if p.is_file())
    if kind == "document":
        return [p for p in every if p.name == "zarr.json"]
    chunks = [p for p in every if "c" in p.relative_to(store).parts]
    if kind == "shard_index":
        return [p for p in chunks if "lvl_2" in p.parts and "embeddings" in p.parts] or chunks
    return chunks


HOSTILE_VALUES = [None, True, -1, 0, 2**63, 2**64 + 1, 1e308, "x", [], {}, [1, 2], "float64", "uint8"]


def _json_set(raw: bytes, position: int, payload: bytes) -> bytes:
    """One value of the document (chosen by position) replaced with a hostile one (chosen by payload)."""
    try:
        document = json.loads(raw)
    except ValueError:
        return raw + payload
    spots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            spots.append((node, key))
            walk(value)

    walk(document)
    if not spots:
        return raw
    container, key = spots[position % len(spots)]
    container[key] = HOSTILE_VALUES[(payload[0] if payload else 0) % len(HOSTILE_VALUES)]
    return json.dumps(document).encode()


def _set_shard_entry(raw: bytes, count: int, position: int, payload: bytes) -> bytes:
    """One of the `count` entries of a shard's index (its last count x 16 + 4 bytes) set to the
    offset and length the payload gives, the index checksum written anew: a lie only the shard's
    size shows."""
    start = len(raw) - 4 - count * 16
    if start < 0:
        return raw
    entry = position % count
    index = bytearray(raw[start:-4])
    index[entry * 16:(entry + 1) * 16] = (payload * 16)[:16]
    return raw[:start] + bytes(index) + google_crc32c.value(bytes(index)).to_bytes(4, "little")


def _inner_chunks(chunk_file: Path) -> int | None:
    """How many inner chunks a shard of the array holding chunk_file has; None: not sharded."""
    try:
        document = json.loads((chunk_file.parent.parent.parent / "zarr.json").read_bytes())
        config = document["codecs"][0]["configuration"]
        return int(document["chunk_grid"]["configuration"]["chunk_shape"][0] // config["chunk_shape"][0])
    except (OSError, ValueError, KeyError, IndexError, TypeError, ZeroDivisionError):
        return None


def apply(mutation: Mutation, stores: dict[str, Path], into: Path) -> Path:
    """A copy of the chosen store with one file mutated; its path."""
    store = into / "mutant.zarr"
    shutil.copytree(stores[mutation.store], store)
    files = _files(store, mutation.kind)
    target = files[mutation.target % len(files)]
    raw = target.read_bytes()
    at = mutation.position % max(1, len(raw))
    if mutation.kind == "shard_index":  # the index is the last bytes of a shard
        at = max(0, len(raw) - 1 - mutation.position % min(len(raw), 68))
    op = mutation.operation
    if op == "flip":
        data = bytearray(raw)
        for i, byte in enumerate(mutation.payload[:4] or b"\x01"):
            if data:
                data[(at + i * 7) % len(data)] ^= byte or 1
        raw = bytes(data)
    elif op == "cut":
        raw = raw[:at]
    elif op == "splice":
        raw = raw[:at] + mutation.payload + raw[at + len(mutation.payload):]
    elif op == "append":
        raw = raw + mutation.payload
    elif op == "json_value":
        raw = _json_set(raw, mutation.position, mutation.payload)
    elif op == "shard_entry":
        count = _inner_chunks(target)
        raw = raw if count is None else _set_shard_entry(raw, count, mutation.position, mutation.payload)
    target.write_bytes(raw)
    return store


mutations = st.builds(
    Mutation,
    store=st.sampled_from(["plain", "sharded"]),
    kind=st.sampled_from(["document", "chunk", "shard_index"]),
    target=st.integers(0, 10_000),
    operation=st.sampled_from(["flip", "cut", "splice", "append", "json_value", "shard_entry"]),
    position=st.integers(0, 1 << 20),
    payload=st.one_of(st.binary(min_size=1, max_size=24),
                      st.sampled_from([b"\xff" * 16, b"\x00" * 16, b"\x28\xb5\x2f\xfd\x00\x00\x00\x00\x40",
                                       (2**64 - 1).to_bytes(8, "little") * 2, (1 << 40).to_bytes(8, "little")])),
)


# ---------------------------------------------------------------------------------- the promises


def _digest(store: Path) -> dict[str, str]:
    return {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file()}


def _leaf_reference(store: Path, leaf: int) -> tuple[np.ndarray, np.ndarray] | Exception | None:
    """A leaf's (item ids, embeddings) by the reference; the reason it cannot be read; None: not modelled."""
    ids = reference(store / "lvl_2" / f"node_{leaf}" / "item_ids")
    vectors = reference(store / "lvl_2" / f"node_{leaf}" / "embeddings")
    for value in (ids, vectors):
        if isinstance(value, Exception):
            return value
    if ids is UNSUPPORTED or vectors is UNSUPPORTED:
        return None
    return np.asarray(ids), np.asarray(vectors)


def _internal_unreadable(store: Path, trace: list[dict[str, Any]]) -> list[str]:
    """The internal nodes on a search's path (and the root) the reference cannot read."""
    folders = [store / "index_root"] + [store / f"lvl_{step['level']}" / f"node_{step['node_id']}"
                                        for step in trace if not step.get("is_leaf")]
    bad = []
    for folder in folders:
        for name in ("embeddings", "node_ids"):
            if (folder / name).exists() and isinstance(reference(folder / name), Exception):
                bad.append(f"{folder.name}/{name}")
    return bad


def judge_search(store: Path, item: int, code: int, out: str) -> None:
    answer = json.loads(out) if out.strip() else {}
    if code != 0 and "unreadable" not in answer:
        return  # it said it could not answer (the message is judged by the generic promises)
    assert (code != 0) == bool(answer["unreadable"]), f"exit {code} with unreadable {answer['unreadable']}"
    trace = answer.get("trace") or []
    skipped = {int(s) if not isinstance(s, dict) else int(s.get("node_id", -1)) for s in answer.get("skipped", [])}
    skipped |= {int(u["node_id"]) for u in answer["unreadable"] if u["level"] == 2}  # named, with why
    bad = _internal_unreadable(store, trace)
    assert not bad, f"answered through nodes the reference cannot read: {bad}"
    leaves = [int(step["node_id"]) for step in trace if step.get("is_leaf")]
    results = answer.get("items") or []
    vectors: dict[int, np.ndarray] = {}
    for leaf in {int(r["leaf"]) for r in results} | set(leaves):
        found = _leaf_reference(store, leaf)
        if isinstance(found, Exception):
            assert leaf in skipped and all(int(r["leaf"]) != leaf for r in results), \
                f"leaf {leaf} cannot be read ({found}) but the answer uses it: {answer}"
        elif found is not None:
            ids, rows = found
            if ids.shape[0] == rows.shape[0]:
                for row, item_id in enumerate(ids.tolist()):
                    vectors.setdefault(int(item_id), rows[row].astype(np.float64))
    query = vectors.get(item)
    if query is None or not results:
        return  # the query's own leaf is not modelled here (or not among the scanned)
    for r in results:
        vector = vectors.get(int(r["item_id"]))
        if vector is None or not np.all(np.abs(np.concatenate([vector, query])) < 1e18):
            continue  # not modelled, or past what float32 scores (inf by the format's arithmetic)
        truth = float(np.sqrt(np.square(vector - query).sum()))
        assert r["score"] == pytest.approx(truth, rel=1e-4, abs=1e-4), \
            f"item {r['item_id']}: score {r['score']} but its stored vector is {truth} away"


def judge_check(store: Path, code: int, out: str) -> None:
    if code != 0:
        return
    unreadable = []
    for folder in [*sorted(store.glob("lvl_*/node_*")), store / "index_root"]:
        for name in ("embeddings", "node_ids", "item_ids"):
            if (folder / name).exists() and isinstance(reference(folder / name), Exception):
                unreadable.append(f"{folder.relative_to(store)}/{name}")
    assert not unreadable, f"check --deep passed an index whose {unreadable} cannot be read:\n{out}"


def judge_leaf_page(store: Path, leaf: int) -> None:
    h = hierarchy(store)
    ref = NodeRef(2, leaf)
    try:
        items = leaf_items(h, ref, whole_level=False)
    except UserError:
        items = None
    expected = reference(store / "lvl_2" / f"node_{leaf}" / "item_ids")
    if items is not None and isinstance(expected, Exception):
        assert items.count == 0 and items.findings, f"listed ids of {ref.path} it could not read: {items.ids}"
    if items is not None and isinstance(expected, np.ndarray) and not items.findings:
        assert np.array_equal(items.ids, expected.astype(np.int64).ravel()), f"{ref.path}: wrong ids"
    vectors = reference(store / "lvl_2" / f"node_{leaf}" / "embeddings")
    try:
        spread = node_spread(h, ref)
    except UserError:
        return
    assert not isinstance(vectors, Exception), f"{ref.path}: a spread of rows it could not read ({vectors})"
    if isinstance(vectors, np.ndarray):
        assert spread.count == vectors.shape[0]


#: an exception's class standing in for what went wrong ("RuntimeError: Zstd decompression error")
CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\b:")


def _generic(code: int, text: str, seen: list[warnings.WarningMessage], what: str) -> None:
    assert code in CONTRACT_CODES, f"{what}: exit {code}\n{text}"
    assert "Traceback" not in text, f"{what}:\n{text}"
    assert not CLASS_NAME.search(text), f"{what}: an exception class for a message:\n{text}"
    foreign = [w for w in seen if issubclass(w.category, (RuntimeWarning, UserWarning, DeprecationWarning))]
    assert not foreign, f"{what}: {[str(w.message) for w in foreign]}"


def _fuzz_settings(long: bool) -> Any:
    # no shrinking: a failure is reported as found (derandomized, so the same example fails again),
    # and CI's time stays bounded; the long run shrinks, for a smaller example to read
    phases = (Phase.explicit, Phase.generate, Phase.shrink) if long else (Phase.explicit, Phase.generate)
    return settings(max_examples=1500 if long else 50, derandomize=True, deadline=None, database=None,
                    phases=phases, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture
def long_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--fuzz-long"))


@pytest.mark.long
@pytest.mark.timeout(900)  # 50 examples take a minute or two on a loaded CI machine; --fuzz-long: add --timeout 0
def test_every_answer_on_a_mutated_index_is_true_or_says_what_could_not_be_read(
        stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        long_run: bool) -> None:
    @_fuzz_settings(long_run)
    @example(mutation=Mutation("sharded", "shard_index", 0, "shard_entry", 0,
                               (1 << 20).to_bytes(8, "little") + (64).to_bytes(8, "little")), item=58, leaf=0)
    @example(mutation=Mutation("sharded", "shard_index", 3, "shard_entry", 1,
                               (2**64 - 8).to_bytes(8, "little") + (64).to_bytes(8, "little")), item=58, leaf=3)
    @given(mutation=mutations, item=st.integers(0, ITEMS - 1), leaf=st.integers(0, 11))
    def one_mutant(mutation: Mutation, item: int, leaf: int) -> None:
        store = apply(mutation, stores, tmp_path_factory.mktemp("mutant"))
        before = _digest(store)
        leaves = sorted(int(p.name.split("_")[1]) for p in (store / "lvl_2").glob("node_*"))
        leaf = leaves[leaf % len(leaves)]
        actions = {"info": ["info", str(store), "--json"], "check": ["check", str(store), "--deep", "--json"],
                   "search": ["search", str(store), "--item", str(item), "--json"]}
        for name, argv in actions.items():
            tracemalloc.start()
            try:
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    code, out, err = run(capsys, *argv)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            _generic(code, out + err, seen, f"{name} on {mutation}")
            assert peak < PEAK_BYTES, f"{name} on {mutation}: peak {peak:,} bytes"
            if name == "search":
                judge_search(store, item, code, out)
            elif name == "check":
                judge_check(store, code, out)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            judge_leaf_page(store, leaf)
        _generic(0, "", seen, f"node page of lvl_2/node_{leaf} on {mutation}")
        assert _digest(store) == before, f"{mutation}: the store changed"
        shutil.rmtree(store.parent, ignore_errors=True)

    one_mutant()


def test_the_reference_reads_the_unmutated_stores(stores: dict[str, Path]) -> None:
    """The oracle itself: both stores read whole by the reference, equal to zarr-python's reading."""
    import zarr

    for store in stores.values():
        for leaf in (store / "lvl_2").glob("node_*"):
            for name in ("embeddings", "item_ids"):
                mine = reference_array(leaf / name)
                assert isinstance(mine, np.ndarray), f"{leaf}/{name}: {mine}"
                assert np.array_equal(mine, np.asarray(zarr.open_array(leaf / name, mode="r")[...]))
