"""The packages that re-export their submodules' names do it on first use: every name they list
resolves, the table behind it is the list, and importing a light submodule leaves zarr unimported."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY_PACKAGES = ["ecpfs_viewer.model.ecpfs", "ecpfs_viewer.model.search"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_listed_name_resolves_to_its_submodules_object(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        owner = getattr(value, "__module__", None)
        if owner is not None and owner.startswith(package + "."):
            assert getattr(importlib.import_module(owner), name) is value


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_name_not_exported_is_an_attribute_error_and_a_submodule_is_found(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
    assert module.locate if package.endswith("search") else module.levels


def test_the_path_grammar_and_the_item_map_import_without_zarr() -> None:
    code = ("import sys; import ecpfs_viewer.model.ecpfs.paths, ecpfs_viewer.model.search.locate; "
            "print(sorted(m for m in ('zarr', 'numcodecs') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
