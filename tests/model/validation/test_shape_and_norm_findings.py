"""The two findings upstream states but never checks (format document §12): a fan-out of 1 or 2
(ECPFS-W024, the tree is all depth), and vector norms that contradict info/is_normalized (ECPFS-W022
when it is set on vectors that are not unit length, ECPFS-I003 when it is not set and every sampled
vector is)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def _index(tmp: Path, data: np.ndarray, *, normalized: bool = False, **params: int) -> Path:
    np.save(tmp / "data.npy", data)
    build_index(tmp / "data.npy", tmp / "idx", BuildParams(is_normalized=normalized, **params))  # type: ignore[arg-type]
    return tmp / "idx"


def _codes(index: Path) -> dict[str, list[str]]:
    report = validate(Hierarchy(open_store(index)))
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f"{f.path}: {f.message}")
    return out


def _rows(n: int, seed: int = 0, unit: bool = False) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, 8)) * 3
    if unit:
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def test_a_fan_out_of_2_is_flagged_and_a_wide_tree_is_not(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    narrow = _index(tmp_path / "a", _rows(256), levels=4, target_cluster_items=16)  # R = 16, ns = 2
    found = _codes(narrow)
    assert fc.FAN_OUT_TINY in found, found
    assert "fan-out 2" in found[fc.FAN_OUT_TINY][0] and found[fc.FAN_OUT_TINY][0].startswith("index_root/embeddings")
    wide = _index(tmp_path / "b", _rows(256), levels=2, target_cluster_items=4)  # R = 64, ns = 8
    assert fc.FAN_OUT_TINY not in _codes(wide)


def test_norms_that_contradict_is_normalized_are_flagged_both_ways(tmp_path: Path) -> None:
    for name in ("unit_unset", "unit_set", "plain_set", "plain_unset"):
        (tmp_path / name).mkdir()
    unit_unset = _codes(_index(tmp_path / "unit_unset", _rows(300, unit=True), levels=2, target_cluster_items=10))
    assert fc.UNIT_BUT_NOT_NORMALIZED in unit_unset and fc.NOT_UNIT_LENGTH not in unit_unset
    assert "is_normalized is not set" in unit_unset[fc.UNIT_BUT_NOT_NORMALIZED][0]
    unit_set = _codes(_index(tmp_path / "unit_set", _rows(300, unit=True), normalized=True, levels=2,
                             target_cluster_items=10))
    assert fc.UNIT_BUT_NOT_NORMALIZED not in unit_set and fc.NOT_UNIT_LENGTH not in unit_set
    plain_set = _codes(_index(tmp_path / "plain_set", _rows(300), normalized=True, levels=2, target_cluster_items=10))
    assert fc.NOT_UNIT_LENGTH in plain_set and "sampled vectors are not unit length" in plain_set[fc.NOT_UNIT_LENGTH][0]
    plain_unset = _codes(_index(tmp_path / "plain_unset", _rows(300), levels=2, target_cluster_items=10))
    assert fc.UNIT_BUT_NOT_NORMALIZED not in plain_unset and fc.NOT_UNIT_LENGTH not in plain_unset
