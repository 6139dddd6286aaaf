"""The one hint every stage gives for an unknown name: the closest known one, or what is known."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'did you mean X?' for the closest choice, or '' when none is close: the one hint every stage gives.

    Case does not count against a choice (``ndr`` -> ``NDR``, ``qm9700`` -> ``QM9700``): a choice equal but for
    case wins, then the closest by the lower-cased spelling."""
    names = list(choices)
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
    if word.lower() in by_lower and by_lower[word.lower()] != word:
        return f"did you mean {by_lower[word.lower()]!r}?"
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"did you mean {by_lower[close[0]]!r}?" if close else ""


def choices_hint(word: str, choices: Iterable[str]) -> str:
    """did-you-mean, else the known names (a count when there are many)."""
    names = sorted(choices)
    guess = did_you_mean(word, names)
    if guess:
        return guess
    return f"known: {', '.join(names)}" if len(names) <= 12 else f"{len(names)} known names; see the catalog"
