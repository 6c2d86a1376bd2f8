"""The one way a JSON document is parsed: its cost bounded before parsing starts.

A metadata document's bytes are capped when it is read, but its bytes do not bound what parsing
it costs: 60 MB of ``[],`` is 20 million list objects (gigabytes). Before ``json.loads`` runs, a
pre-scan at C speed counts the values and measures the nesting (numpy over blocks of the bytes:
quotes that are not escaped mark the strings, whose brackets and commas do not count; the depth
is a running sum of brackets), and a document past ``Limits.max_json_values`` or
``Limits.max_json_depth`` is refused with a message naming it. Every parse of a stored document,
a cache file or a remembered setting goes through :func:`parse_json`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np

from ecpfs_viewer.model.errors import MetadataError
from ecpfs_viewer.model.limits import Limits, current_limits

log = logging.getLogger(__name__)

_BLOCK = 1 << 20  # bytes scanned at a time: the scan's memory stays a few MB whatever the document
_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_OPEN, _CLOSE = (ord("["), ord("{")), (ord("]"), ord("}"))


class JsonRefused(MetadataError):
    """A document refused before parsing: more values or deeper nesting than the caps allow."""


class _Scan:
    """Counts of structural characters outside strings, and the deepest nesting, in one pass."""

    def __init__(self, raw: bytes) -> None:
        self.commas = self.containers = self.empty = 0
        self.depth = self.deepest = 0
        self._in_string = False
        self._backslashes = 0  # backslashes just before the current block
        self._last_outside = 0  # the previous block's last byte, when outside a string (0 otherwise)
        data = np.frombuffer(raw, dtype=np.uint8)
        for start in range(0, len(data), _BLOCK):
            self._block(data[start:start + _BLOCK])

    @property
    def values(self) -> int:
        """Each non-empty array or object holds one more value than it has commas, and the document
        itself is one (an upper bound for an invalid document; an empty container written with
        spaces inside counts as holding one value, never less than the truth)."""
        return 1 + self.commas + self.containers - self.empty

    def _block(self, block: np.ndarray) -> None:
        quote = block == _QUOTE
        backslash = block == _BACKSLASH
        if backslash.any():  # a quote after an odd run of backslashes is inside its string
            index = np.arange(len(block), dtype=np.int64)
            last_other = np.maximum.accumulate(np.where(backslash, -self._backslashes - 1, index))
            run = index - last_other  # backslashes ending at each byte
            before = np.concatenate(([self._backslashes], run[:-1]))
            quote &= before % 2 == 0
            self._backslashes = int(run[-1])
        else:
            if self._backslashes % 2:
                quote[0] = False  # escaped by the backslashes that ended the previous block
            self._backslashes = 0
        quotes = np.cumsum(quote, dtype=np.int32)
        outside = (quotes + self._in_string) % 2 == 0
        outside &= ~quote
        opens = ((block == _OPEN[0]) | (block == _OPEN[1])) & outside
        closes = ((block == _CLOSE[0]) | (block == _CLOSE[1])) & outside
        self.commas += int(np.count_nonzero((block == _COMMA) & outside))
        self.containers += int(np.count_nonzero(opens))
        head, tail = block[:-1], block[1:]
        pairs = ((head == _OPEN[0]) & (tail == _CLOSE[0])) | ((head == _OPEN[1]) & (tail == _CLOSE[1]))
        self.empty += int(np.count_nonzero(pairs & outside[:-1] & outside[1:]))
        if closes[0] and self._last_outside in _OPEN and _OPEN.index(self._last_outside) == _CLOSE.index(block[0]):
            self.empty += 1
        step = opens.astype(np.int32) - closes
        running = np.cumsum(step, dtype=np.int32)
        self.deepest = max(self.deepest, self.depth + int(np.max(running)))
        self.depth += int(running[-1])
        self._in_string = bool((int(quotes[-1]) + self._in_string) % 2)
        self._last_outside = int(block[-1]) if outside[-1] else 0


def count_values(raw: bytes) -> int:
    """The number of JSON values a document holds (strings left out of the count of commas and brackets)."""
    return _Scan(raw).values


def nesting_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest (0 for a scalar), brackets in strings left out."""
    return _Scan(raw).deepest


_REFUSED: dict[tuple[int, int], tuple[int, int]] = {}  # (length, hash) -> (values, depth) of refused documents


def check_json_cost(raw: bytes, where: str, limits: Limits | None = None) -> None:
    """Raise JsonRefused when parsing raw would build more values, or nest deeper, than the caps.

    Cheap for the documents that make up nearly every store: the commas and brackets of the whole
    document (strings included) bound what the scan would count, so a document whose bound passes
    is not scanned. A refused document, asked about again, is not scanned again.
    """
    limits = limits or current_limits()
    if len(raw) <= min(limits.max_json_values, limits.max_json_depth):
        return  # every value and every level takes at least a byte
    containers = raw.count(b"[") + raw.count(b"{")
    values_at_risk = len(raw) > limits.max_json_values and 1 + raw.count(b",") + containers > limits.max_json_values
    depth_at_risk = containers > limits.max_json_depth
    if not (values_at_risk or depth_at_risk):
        return
    key = (len(raw), hash(raw))  # a bytes object keeps its hash: the second look costs nothing
    measured = _REFUSED.get(key)
    if measured is None:
        scan = _Scan(raw)
        measured = (scan.values, scan.deepest)
    values, depth = measured
    refusal = None
    if values > limits.max_json_values:
        refusal = (f"{where}: {values:,} JSON values, more than "
                   f"{limits.describe('max_json_values')} on values in one document; could not be read")
    elif depth > limits.max_json_depth:
        refusal = (f"{where}: nested {depth:,} levels deep, more than "
                   f"{limits.describe('max_json_depth')} on JSON nesting; could not be read")
    if refusal is not None:
        if len(_REFUSED) >= 64:
            _REFUSED.clear()
        _REFUSED[key] = measured  # only refusals: a hash collision could refuse, never let through
        raise JsonRefused(refusal)


#: A member of a group document that only repeats what is stored elsewhere (zarr-python's copy of
#: the descendants' documents): past the caps it is left out rather than the group refused.
DERIVED_MEMBER = b'"consolidated_metadata"'


def member_span(raw: bytes, key: bytes) -> tuple[int, int] | None:
    """[start, stop) of the value of the top-level object's member named `key` (quoted), found
    outside strings at depth 1; None when there is none. One pass over blocks, as the scan."""
    data = np.frombuffer(raw, dtype=np.uint8)
    depth, in_string, backslashes = 0, False, 0
    start = -1
    for offset in range(0, len(data), _BLOCK):
        block = data[offset:offset + _BLOCK]
        quote = block == _QUOTE
        backslash = block == _BACKSLASH
        index = np.arange(len(block), dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(backslash, -backslashes - 1, index))
        run = index - last_other
        quote &= np.concatenate(([backslashes], run[:-1])) % 2 == 0
        backslashes = int(run[-1])
        quotes = np.cumsum(quote, dtype=np.int32)
        outside = ((quotes + in_string) % 2 == 0) & ~quote
        opens = ((block == _OPEN[0]) | (block == _OPEN[1])) & outside
        closes = ((block == _CLOSE[0]) | (block == _CLOSE[1])) & outside
        level = depth + np.cumsum(opens.astype(np.int32) - closes, dtype=np.int32)  # depth after each byte
        if start < 0:
            at = raw.find(key, offset, offset + len(block))
            while at >= 0:
                i = at - offset
                if quote[i] and level[i] == 1 and (quotes[i] + in_string) % 2 == 1:  # an opening quote at depth 1
                    colon = raw.find(b":", at + len(key))
                    start = colon + 1 if colon >= 0 else -1
                    break
                at = raw.find(key, at + 1, offset + len(block))
        if start >= 0:
            ends = np.flatnonzero(outside & (index + offset >= start) & (
                ((block == _COMMA) & (level == 1)) | (closes & (level == 0))))
            if ends.size:
                return start, offset + int(ends[0])
        depth = int(level[-1])
        in_string = bool((int(quotes[-1]) + in_string) % 2)
    return None


def parse_json(raw: bytes | str, where: str, limits: Limits | None = None) -> Any:
    """The parsed document, its cost checked first.

    Raises JsonRefused past a cap, and MetadataError (a ValueError) naming `where` for a document
    that is not JSON; both messages are written for the user. A group's consolidated metadata that
    passes a cap is left out (read as null: the descendants' own documents are read instead).
    """
    data = raw.encode("utf-8", errors="surrogatepass") if isinstance(raw, str) else bytes(raw)
    try:
        check_json_cost(data, where, limits)
    except JsonRefused:
        span = member_span(data, DERIVED_MEMBER) if DERIVED_MEMBER in data else None
        if span is None:
            raise
        data = data[:span[0]] + b"null" + data[span[1]:]
        check_json_cost(data, where, limits)
        log.warning("%s: its consolidated metadata passes the caps; left out (the nodes' own documents are read)",
                    where)
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise MetadataError(f"{where}: not valid JSON (not UTF-8 text: {exc.reason} at byte {exc.start:,})") from exc
    except ValueError as exc:
        if data.lstrip()[:1] == b"<":
            raise MetadataError(f"{where}: not valid JSON but a web page (what a login or error page "
                                "answers in its place)") from exc
        raise MetadataError(f"{where}: not valid JSON ({exc})") from exc
    except RecursionError as exc:
        raise MetadataError(f"{where}: nested too deeply to read") from exc
