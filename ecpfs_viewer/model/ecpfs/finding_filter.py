"""What the window's findings filter means: words that must appear, and codes to leave out.

The same grammar as `check --ignore`: ``-W005`` (or ``-ECPFS-W005``) hides a code; any other word
keeps only the findings whose path, code or message contains it (case-insensitive). A ``-word`` that
is not a code is reported, never silently taken as text, so a typo does not hide nothing quietly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecpfs_viewer.model.ecpfs.finding_codes import normalise_code


@dataclass(frozen=True)
class FindingFilter:
    words: tuple[str, ...] = ()
    hidden_codes: tuple[str, ...] = ()
    unknown_codes: tuple[str, ...] = ()

    def matches(self, path: str, code: str, message: str) -> bool:
        if code in self.hidden_codes:
            return False
        text = f"{path}\n{code}\n{message}".lower()
        return all(word in text for word in self.words)

    @property
    def active(self) -> bool:
        return bool(self.words or self.hidden_codes)


def parse_finding_filter(text: str) -> FindingFilter:
    words: list[str] = []
    hidden: list[str] = []
    unknown: list[str] = []
    for token in text.split():
        if token.startswith("-") and len(token) > 1:
            for part in filter(None, token[1:].split(",")):
                code = normalise_code(part)
                (hidden if code is not None else unknown).append(code or part)
        else:
            words.append(token.lower())
    return FindingFilter(tuple(words), tuple(dict.fromkeys(hidden)), tuple(dict.fromkeys(unknown)))
