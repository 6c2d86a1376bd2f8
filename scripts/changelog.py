#!/usr/bin/env python3
"""Write the released versions of CHANGELOG.md into the AppStream metainfo's <releases>.

CHANGELOG.md (Keep a Changelog) is the one source of truth: this script renders each released
version (not [Unreleased]) as a <release> and replaces the metainfo's <releases> element with
them. Usage:
    python3 scripts/changelog.py           # rewrite the metainfo
    python3 scripts/changelog.py --check   # exit 1 when the metainfo does not agree
tests/test_packaging.py runs the check.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"
METAINFO = ROOT / "ecpfs_viewer" / "resources" / "io.github.ecpfs_viewer.ecpfs_viewer.metainfo.xml"

_VERSION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$")
_SECTION = re.compile(r"^### (?P<name>.+?)\s*$")
_RELEASES = re.compile(r"^(?P<indent>[ \t]*)<releases>.*?</releases>[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass
class Release:
    version: str
    date: str
    sections: dict[str, list[str]] = field(default_factory=dict)


def parse(text: str) -> list[Release]:
    """The released versions of a Keep a Changelog text, newest first; bullets may wrap over lines."""
    releases: list[Release] = []
    current: Release | None = None
    items: list[str] | None = None
    for line in text.splitlines():
        heading = _VERSION.match(line)
        if heading:
            items = None
            current = None
            if heading["version"].lower() != "unreleased":
                if not heading["date"]:
                    raise ValueError(f"CHANGELOG.md: release {heading['version']} has no date (## [X] - YYYY-MM-DD)")
                current = Release(heading["version"], heading["date"])
                releases.append(current)
            continue
        section = _SECTION.match(line)
        if section and current is not None:
            items = current.sections.setdefault(section["name"], [])
        elif items is not None and line.startswith("- "):
            items.append(line[2:].strip())
        elif items is not None and line.startswith("  ") and line.strip() and items:
            items[-1] += " " + line.strip()
    return releases


def _plain(markdown: str) -> str:
    """A bullet as AppStream text: no markdown code marks or links, XML-escaped."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown).replace("`", "")
    return escape(text)


def render(releases: list[Release], indent: str = "  ") -> str:
    """The <releases> element for these releases, indented as in the metainfo file."""
    inner = indent * 2
    lines = [f"{indent}<releases>"]
    for release in releases:
        lines.append(f"{inner}<release version={quoteattr(release.version)} date={quoteattr(release.date)}>")
        lines.append(f"{inner}  <description>")
        for name, items in release.sections.items():
            lines.append(f"{inner}    <p>{escape(name)}:</p>")
            lines.append(f"{inner}    <ul>")
            lines += [f"{inner}      <li>{_plain(item)}</li>" for item in items]
            lines.append(f"{inner}    </ul>")
        lines.append(f"{inner}  </description>")
        lines.append(f"{inner}</release>")
    lines.append(f"{indent}</releases>")
    return "\n".join(lines)


def synced_metainfo(changelog: str, metainfo: str) -> str:
    """The metainfo text with its <releases> element rendered from the changelog."""
    found = _RELEASES.search(metainfo)
    if found is None:
        raise ValueError("the metainfo has no <releases> element to fill")
    block = render(parse(changelog), found["indent"])
    return metainfo[:found.start()] + block + metainfo[found.end():]


def main(argv: list[str]) -> int:
    current = METAINFO.read_text(encoding="utf-8")
    wanted = synced_metainfo(CHANGELOG.read_text(encoding="utf-8"), current)
    if "--check" in argv:
        if wanted != current:
            print(f"{METAINFO.relative_to(ROOT)} does not match CHANGELOG.md: run python3 scripts/changelog.py")
            return 1
        return 0
    if wanted != current:
        METAINFO.write_text(wanted, encoding="utf-8")
        print(f"wrote the releases of CHANGELOG.md into {METAINFO.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
