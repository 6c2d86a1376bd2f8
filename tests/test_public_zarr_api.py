"""ecpfs_viewer uses zarr-python's public API only: no zarr.core / private modules, no private attributes.

zarr.core.* is internal and changes between minor releases (3.4 removed
ArrayV3Metadata.get_chunk_spec, which broke search on what users install). An AST scan of every
module of ecpfs_viewer fails the build when such a use comes back, naming file, line and use.

What counts as private, precisely:
- importing a zarr module below ``zarr.core`` or with a ``_``-named part (``zarr.storage._common``),
  or a ``_``-named name from a zarr module; ``zarr.core...`` reached as an attribute chain;
- ``obj._name`` where ``_name`` is a private attribute of zarr's public classes (read from zarr
  itself, instances included) and no class of ours defines it; ``get_chunk_spec`` anywhere;
- in a class of ours that subclasses a zarr class: ``self._name`` / ``super()._name`` or a method
  ``_name`` that zarr's base class already has (overriding or using its internals), except the
  documented extension points of WrapperStore (``_store``, ``_with_store``).
"""

from __future__ import annotations

import ast
import dataclasses
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import zarr
import zarr.abc.buffer
import zarr.abc.store
import zarr.buffer.cpu
import zarr.codecs
import zarr.storage

PACKAGE = Path(__file__).resolve().parents[1] / "ecpfs_viewer"
#: names that are private to zarr even though they carry no underscore (removed internals)
ALWAYS_PRIVATE = frozenset({"get_chunk_spec"})
#: WrapperStore's documented way to subclass it: the wrapped store and the re-wrap hook; a codec's
#: per-chunk decode (BaseCodec._decode_single, SupportsSyncCodec._decode_sync)
SUBCLASS_HOOKS = frozenset({"_store", "_with_store", "_decode_single", "_decode_sync"})


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _is_private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "zarr" and len(parts) > 1 and (parts[1] == "core" or any(p.startswith("_") for p in parts[1:]))


def _zarr_classes(tmp: Path) -> list[type]:
    """zarr's public classes a viewer meets, and instances of the stores (their private fields)."""
    classes: list[type] = [zarr.Array, zarr.AsyncArray, zarr.Group, zarr.AsyncGroup, zarr.abc.store.Store,
                           zarr.buffer.cpu.Buffer, zarr.buffer.cpu.NDBuffer]
    classes += [getattr(zarr.storage, n) for n in zarr.storage.__all__ if isinstance(getattr(zarr.storage, n), type)]
    classes += [getattr(zarr.abc.buffer, n) for n in zarr.abc.buffer.__all__
                if isinstance(getattr(zarr.abc.buffer, n), type)]
    classes += [c for c in vars(zarr.codecs).values() if isinstance(c, type)]
    array = zarr.create_array(zarr.storage.MemoryStore(), shape=(2,), dtype="uint8", zarr_format=3)
    classes += [type(array.metadata), type(array.metadata.chunk_key_encoding)]
    return classes


def _zarr_private_names(tmp: Path) -> frozenset[str]:
    names: set[str] = set()
    for cls in _zarr_classes(tmp):
        for klass in cls.__mro__:
            names.update(vars(klass))
            names.update(getattr(klass, "__annotations__", {}))
        if dataclasses.is_dataclass(cls):
            names.update(f.name for f in dataclasses.fields(cls))
    with zipfile.ZipFile(tmp / "a.zip", "w") as archive:
        archive.writestr("zarr.json", "{}")
    array = zarr.create_array(zarr.storage.MemoryStore(), shape=(2,), dtype="uint8", zarr_format=3)
    instances = [zarr.storage.ZipStore(tmp / "a.zip", mode="r"), zarr.storage.LocalStore(tmp),
                 zarr.storage.MemoryStore(), array]
    for instance in instances:
        names.update(getattr(instance, "__dict__", {}))
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _ours_defined(trees: dict[str, ast.Module]) -> frozenset[str]:
    """Every _name a module of ours defines: methods, functions, class attributes, self._x = ..."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(n for n in names if n.startswith("_"))


def _zarr_bindings(tree: ast.Module) -> dict[str, object]:
    """Names a module binds to zarr objects by import (name -> the object), to resolve class bases."""
    bound: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "zarr":
            try:
                module = __import__(node.module, fromlist=["_"])
            except ImportError:
                continue
            for alias in node.names:
                if hasattr(module, alias.name):
                    bound[alias.asname or alias.name] = getattr(module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "zarr":
                    bound[(alias.asname or alias.name).split(".")[0]] = zarr
    return bound


def _resolve(expr: ast.expr, bound: dict[str, object]) -> object | None:
    if isinstance(expr, ast.Subscript):  # WrapperStore[Store]
        return _resolve(expr.value, bound)
    if isinstance(expr, ast.Name):
        return bound.get(expr.id)
    if isinstance(expr, ast.Attribute):
        owner = _resolve(expr.value, bound)
        return getattr(owner, expr.attr, None) if owner is not None else None
    return None


def _is_self_or_super(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in ("self", "cls")
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "super"


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    parts = [node.attr]
    value: ast.expr = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    parts.append(value.id)
    return parts[::-1]


def scan(trees: dict[str, ast.Module], zarr_private: frozenset[str]) -> list[Use]:
    """Every use of zarr's private API in the parsed modules (path -> tree)."""
    ours = _ours_defined(trees)
    found: list[Use] = []
    for path, tree in trees.items():
        bound = _zarr_bindings(tree)
        in_zarr_subclass: dict[int, type] = {}  # id of an attribute node inside such a class -> its zarr base
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [b for b in (_resolve(e, bound) for e in node.bases) if isinstance(b, type)]
                if bases:
                    for inner in ast.walk(node):
                        in_zarr_subclass[id(inner)] = bases[0]
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "zarr":
                if _is_private_module(node.module):
                    found.append(Use(path, line, f"from {node.module} import ..."))
                else:
                    found += [Use(path, line, f"from {node.module} import {a.name}") for a in node.names
                              if a.name.startswith("_") or _is_private_module(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Import):
                found += [Use(path, line, f"import {a.name}") for a in node.names if _is_private_module(a.name)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name) and node.args:
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                first = node.args[0]
                if name in ("import_module", "__import__") and isinstance(first, ast.Constant) \
                        and isinstance(first.value, str) and _is_private_module(first.value):
                    found.append(Use(path, line, f"{name}({first.value!r})"))
            if isinstance(node, ast.Attribute):
                chain = _attribute_chain(node)
                if chain and chain[0] in bound and bound[chain[0]] is zarr and len(chain) > 1 \
                        and _is_private_module(".".join(chain[:2])) and len(chain) == 2:
                    found.append(Use(path, line, ".".join(chain)))
                base = in_zarr_subclass.get(id(node))
                if node.attr in ALWAYS_PRIVATE:
                    found.append(Use(path, line, f".{node.attr}"))
                elif not node.attr.startswith("_") or node.attr.startswith("__"):
                    continue
                elif _is_self_or_super(node.value):
                    if base is not None and hasattr(base, node.attr) and node.attr not in SUBCLASS_HOOKS:
                        found.append(Use(path, line, f"{ast.unparse(node)} (private to {base.__name__})"))
                    elif base is not None and node.attr in zarr_private and node.attr not in SUBCLASS_HOOKS \
                            and node.attr not in ours:
                        found.append(Use(path, line, f"{ast.unparse(node)} (a private field of {base.__name__})"))
                elif node.attr in zarr_private and node.attr not in ours:
                    found.append(Use(path, line, f"{ast.unparse(node)} (private to zarr)"))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("_") \
                    and not node.name.startswith("__"):
                base = in_zarr_subclass.get(id(node))
                if base is not None and hasattr(base, node.name) and node.name not in SUBCLASS_HOOKS:
                    found.append(Use(path, line, f"def {node.name} overrides {base.__name__}.{node.name}"))
    return sorted(set(found), key=lambda u: (u.path, u.line, u.what))


def _parse_package(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for file in sorted(root.rglob("*.py")):
        yield str(file.relative_to(root.parent)), ast.parse(file.read_text(encoding="utf-8"), str(file))


@pytest.fixture(scope="module")
def zarr_private(tmp_path_factory: pytest.TempPathFactory) -> frozenset[str]:
    return _zarr_private_names(tmp_path_factory.mktemp("zarr_private"))


def test_ecpfs_viewer_uses_only_public_zarr_api(zarr_private: frozenset[str]) -> None:
    uses = scan(dict(_parse_package(PACKAGE)), zarr_private)
    assert not uses, "zarr internals used (zarr.core is not public; see docs/architecture.md):\n" + \
        "\n".join(map(str, uses))


# what the scan must catch: the uses that were in ecpfs_viewer before (3.4 broke the first one)
_PRIVATE_USES = '''
import zarr
from zarr.core.buffer import Buffer, default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage._common import StorePath
from zarr.storage import ZipStore, WrapperStore
import zarr.core.metadata.v3

def spec(array):
    return array.metadata.get_chunk_spec((0,), array.config, default_buffer_prototype())

def twin(array):
    return array._async_array, zarr.core.sync

class Guarded(ZipStore):
    def _get(self, key, prototype, byte_range=None):
        if not self._is_open:
            self._sync_open()
        info = self._zf.getinfo(key)
        return super()._get(key, prototype, byte_range)

def peek(store):
    return store._zf.namelist()
'''

_PUBLIC_USES = '''
import zarr
from zarr.abc.buffer import Buffer
from zarr.buffer import default_buffer_prototype
from zarr.storage import StorePath, WrapperStore, ZipStore

class Counting(WrapperStore):
    def __init__(self, store, counter):
        super().__init__(store)
        self._counter = counter

    def _with_store(self, store):
        return Counting(store, self._counter)

    async def get(self, key, prototype, byte_range=None):
        self._count()
        return await self._store.get(key, prototype, byte_range)

    def _count(self):
        self._counter += 1

class Tree:
    def __init__(self):
        self._lock = None

def probe(tree):
    return tree._lock, zarr.AsyncArray.from_dict
'''


def test_the_scan_names_each_private_use(zarr_private: frozenset[str]) -> None:
    uses = [u.what for u in scan({"bad.py": ast.parse(_PRIVATE_USES)}, zarr_private)]
    expected = ["from zarr.core.buffer import ...", "from zarr.core.sync import ...",
                "from zarr.storage._common import ...", "import zarr.core.metadata.v3", ".get_chunk_spec",
                "array._async_array (private to zarr)", "zarr.core", "def _get overrides ZipStore._get",
                "self._is_open (a private field of ZipStore)", "self._sync_open (private to ZipStore)",
                "self._zf (a private field of ZipStore)", "super()._get (private to ZipStore)",
                "store._zf (private to zarr)"]
    missing = [e for e in expected if e not in uses]
    assert not missing, f"not caught: {missing}; caught: {uses}"
    assert len(uses) == len(expected), uses


def test_the_scan_leaves_public_uses_and_our_own_private_names_alone(zarr_private: frozenset[str]) -> None:
    assert scan({"good.py": ast.parse(_PUBLIC_USES)}, zarr_private) == []
