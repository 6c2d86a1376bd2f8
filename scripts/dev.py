#!/usr/bin/env python3
"""Set up a private virtual environment and run ecpfs-viewer or its tests.

Needs only python3 (>= 3.11). Usage:
    python3 scripts/dev.py run [ecpfs-viewer arguments]   # GUI on the demo index by default
    python3 scripts/dev.py test                           # lint, types, import contract, all tests
    python3 scripts/dev.py test [pytest arguments]        # only the tests named (no static checks)
    python3 scripts/dev.py check                          # only the static checks
The environment lives in .venv/ beside this checkout and is refreshed whenever
pyproject.toml changes. `setup` and `test` also install Azurite (the Azure Blob emulator the
az:// tests run against) with npm into .venv/azurite, when npm is there.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".ecpfs-viewer-installed"
AZURITE_VERSION = "3.37.0"  # the Azure Blob emulator of the az:// tests (tests/cloud_emulators.py)
AZURITE = VENV / "azurite"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment() -> Path:
    """Create .venv and install the project with its test extra when missing or stale."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not venv_python().exists():
        print(f"Creating virtual environment in {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    if not STAMP.exists() or STAMP.read_text().strip() != wanted:
        print("Installing ecpfs-viewer and its dependencies ...", flush=True)
        subprocess.run(
            [str(venv_python()), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]"],
            check=True,
        )
        STAMP.write_text(wanted)
    return venv_python()


def azurite_version() -> str | None:
    """The Azurite version installed in .venv/azurite, or None."""
    try:
        manifest = json.loads((AZURITE / "node_modules" / "azurite" / "package.json").read_text())
    except (OSError, ValueError):
        return None
    return str(manifest.get("version"))


def ensure_azurite() -> None:
    """npm-install the pinned Azurite into .venv/azurite when it is missing or another version;
    without npm (or offline) say so and go on: the az:// tests then skip (and fail in CI)."""
    if azurite_version() == AZURITE_VERSION:
        return
    npm = shutil.which("npm")
    if npm is None:
        print("note: npm not found; the az:// tests need Azurite (install Node.js and npm, then run "
              "python3 scripts/dev.py setup)", flush=True)
        return
    print(f"Installing Azurite {AZURITE_VERSION} (the Azure Blob emulator for the tests) into {AZURITE} ...",
          flush=True)
    AZURITE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(AZURITE), "--no-audit", "--no-fund",
                           "--loglevel=error", f"azurite@{AZURITE_VERSION}"], check=False)
    if done.returncode or azurite_version() != AZURITE_VERSION:
        print(f"note: npm could not install Azurite (exit {done.returncode}); the az:// tests need it",
              flush=True)


def static_checks(python: Path) -> int:
    """ruff, the import contracts and mypy (strict on the model), stopping at the first failure."""
    bin_dir = python.parent
    steps = [
        ("ruff", [str(python), "-m", "ruff", "check", "."]),
        ("import contracts", [str(bin_dir / "lint-imports")]),
        ("mypy", [str(python), "-m", "mypy"]),
    ]
    for name, command in steps:
        print(f"== {name}", flush=True)
        code = subprocess.call(command, cwd=ROOT)
        if code:
            print(f"== {name} failed (exit {code})", flush=True)
            return code
    return 0


def run_forwarding_signals(command: list[str]) -> int:
    """Run a child and pass SIGTERM/SIGINT on to it, so killing dev.py also ends the GUI."""
    child = subprocess.Popen(command, cwd=ROOT)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    return child.wait()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "check", "setup"}:
        print(__doc__)
        return 2
    python = ensure_environment()
    command, rest = argv[0], argv[1:]
    if command in ("setup", "test"):
        ensure_azurite()
    if command == "setup":
        return 0
    if command == "run":
        args = rest or ["--demo"]
        return run_forwarding_signals([str(python), "-m", "ecpfs_viewer", *args])
    if command == "check" or not rest:
        code = static_checks(python)
        if code or command == "check":
            return code
    return subprocess.call([str(python), "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
