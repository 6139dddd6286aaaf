"""The one hint every stage gives for an unknown name: the closest known one, or what is known."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'did you mean X?' for the closest choice, or '' when none is close: the one hint every stage gives."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def choices_hint(word: str, choices: Iterable[str]) -> str:
    """did-you-mean, else the known names (a count when there are many)."""
    names = sorted(choices)
    guess = did_you_mean(word, names)
    if guess:
        return guess
    return f"known: {', '.join(names)}" if len(names) <= 12 else f"{len(names)} known names; see the catalog"
