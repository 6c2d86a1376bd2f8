"""The model layer must work without Qt: importing all of it loads no Qt or pyqtgraph module."""

import subprocess
import sys

CHECK = r"""
import importlib, pkgutil, sys
import ecpfs_viewer.model as model
for info in pkgutil.iter_modules(model.__path__):
    importlib.import_module(f"ecpfs_viewer.model.{info.name}")
import ecpfs_viewer.cli.read  # the read subcommands must not need Qt either
qt = {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6", "qtpy"}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in qt)
print(",".join(loaded))
"""


def test_model_imports_without_qt() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
