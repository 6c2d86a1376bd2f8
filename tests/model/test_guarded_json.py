"""The one guarded JSON parse: what it counts, what it refuses, and that real documents still parse."""

from __future__ import annotations

import json
import random
import tracemalloc
from typing import Any

import pytest
from hostile_builders import empty_lists  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model import guarded_json
from ecpfs_viewer.model.errors import MetadataError
from ecpfs_viewer.model.guarded_json import JsonRefused, check_json_cost, count_values, nesting_depth, parse_json
from ecpfs_viewer.model.limits import Limits


def _values(value: Any) -> int:
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    return 1


def _depth(value: Any) -> int:
    children = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else None
    return 0 if children is None else 1 + max((_depth(v) for v in children), default=0)


_TRICKY = ["a,b", "[", "}{", "\\", '"', '\\"]', "", "\\\\\\", "[]", "{}", "é,"]


def _document(rnd: random.Random, depth: int = 0) -> Any:
    pick = rnd.random()
    if depth < 6 and pick < 0.3:
        return [_document(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    if depth < 6 and pick < 0.5:
        return {rnd.choice(["a", *_TRICKY]): _document(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}
    return rnd.choice([1, -2.5e10, None, True, False, *_TRICKY])


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 20])
def test_values_and_depth_are_counted_exactly_whatever_the_strings_hold(monkeypatch: pytest.MonkeyPatch,
                                                                       block: int) -> None:
    """Brackets, commas, quotes and backslashes inside strings do not count, also across the
    blocks the scan reads at a time."""
    monkeypatch.setattr(guarded_json, "_BLOCK", block)
    rnd = random.Random(34)
    for _ in range(150):
        value = _document(rnd)
        for text in (json.dumps(value), json.dumps(value, indent=1), json.dumps(value, ensure_ascii=False,
                                                                                  separators=(",", ":"))):
            raw = text.encode()
            assert count_values(raw) == _values(value), text
            assert nesting_depth(raw) == _depth(value), text


def test_too_many_values_are_refused_before_parsing_in_bounded_memory() -> None:
    raw = b'{"zarr_format": 3, "attributes": {"bulk": ' + empty_lists(20_000_000) + b"}}"
    tracemalloc.start()
    try:
        with pytest.raises(JsonRefused) as refused:
            parse_json(raw, "lvl_2/node_0/zarr.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value) == ("lvl_2/node_0/zarr.json: 20,000,004 JSON values, more than the 1,000,000 cap "
                                  "(ECPFS_VIEWER_MAX_JSON_VALUES) on values in one document; could not be read")
    assert peak < 32 << 20  # the scan reads blocks; parsing would have built 20 million lists


def test_deep_nesting_is_refused_and_a_long_string_is_not_counted() -> None:
    with pytest.raises(JsonRefused, match=r"^a/zarr.json: nested 200 levels deep, more than the 128 cap "
                                          r"\(ECPFS_VIEWER_MAX_JSON_DEPTH\) on JSON nesting; could not be read$"):
        parse_json(b"[" * 200 + b"]" * 200, "a/zarr.json")
    brackets = json.dumps({"s": "[[[[,,,," * 400_000}).encode()  # 1.6 million brackets, all in a string
    assert parse_json(brackets, "b/zarr.json") == json.loads(brackets)


def test_the_caps_are_limits_like_the_others() -> None:
    assert Limits().describe("max_json_values") == "the 1,000,000 cap (ECPFS_VIEWER_MAX_JSON_VALUES)"
    assert Limits().describe("max_json_depth") == "the 128 cap (ECPFS_VIEWER_MAX_JSON_DEPTH)"
    raw = json.dumps([[1, 2]] * 10).encode()
    with pytest.raises(JsonRefused, match="31 JSON values, more than the 20 cap"):
        parse_json(raw, "x", Limits(max_json_values=20))
    with pytest.raises(JsonRefused, match="nested 2 levels deep, more than the 1 cap"):
        parse_json(raw, "x", Limits(max_json_depth=1))


def test_not_json_is_an_error_naming_the_document() -> None:
    with pytest.raises(MetadataError, match=r"^a/zarr.json: not valid JSON \(Expecting property name"):
        parse_json(b"{'single': 'quotes'}", "a/zarr.json")
    with pytest.raises(MetadataError, match=r"^a/zarr.json: not valid JSON but a web page \(what a login"):
        parse_json(b"  <html><body>Sign in to the network</body></html>", "a/zarr.json")
    with pytest.raises(MetadataError, match=r"^a/zarr.json: not valid JSON \(not UTF-8 text"):
        parse_json(b'{"a": "\xff"}', "a/zarr.json")


def test_consolidated_metadata_of_a_large_store_still_parses() -> None:
    """A root document consolidating 8,000 arrays (what zarr-python writes) is well under the caps."""
    entry = {"zarr_format": 3, "node_type": "array", "shape": [100, 64], "data_type": "float32",
             "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [65536, 64]}},
             "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
             "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                           {"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
             "attributes": {}, "dimension_names": None}
    document = {"zarr_format": 3, "node_type": "group", "attributes": {},
                "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                          "metadata": {f"lvl_3/node_{i}/embeddings": entry for i in range(8000)}}}
    raw = json.dumps(document, indent=2).encode()
    assert parse_json(raw, "zarr.json") == document


@pytest.mark.parametrize("indent", [None, 2])
def test_consolidated_metadata_past_the_caps_is_left_out_not_the_group(indent: int | None) -> None:
    """A root consolidating 40,000 arrays (about 2.5 M values) still opens: its consolidated copy
    of the nodes' documents is left out (they are read themselves), the rest of the group kept."""
    entry = {"node_type": "array", "shape": [100, 64], "attributes": {"a": "}{,[\"x\\\""}, "fill": [1, 2]}
    document = {"zarr_format": 3, "node_type": "group", "attributes": {"kept": [1, {"b": ","}]},
                "consolidated_metadata": {"kind": "inline", "metadata": {f"n{i}": entry for i in range(40_000)}},
                "after": "kept"}
    raw = json.dumps(document, indent=indent).encode()
    limits = Limits(max_json_values=100_000)
    with pytest.raises(JsonRefused):
        check_json_cost(raw, "zarr.json", limits)
    assert parse_json(raw, "zarr.json", limits) == {**document, "consolidated_metadata": None}


def test_only_a_top_level_consolidated_member_is_left_out() -> None:
    """The name inside a string or a nested object is not the member; past the caps it stays refused."""
    many = list(range(200_000))
    nested = json.dumps({"attributes": {"consolidated_metadata": many}, "s": '"consolidated_metadata": 1'}).encode()
    with pytest.raises(JsonRefused):
        parse_json(nested, "zarr.json", Limits(max_json_values=100_000))
