"""A block-style YAML writer for the plain data switch configs are made of (dicts, lists, str, int, bool, None).

PyYAML's representer runs in Python even with libyaml's emitter and cost ~10 ms per switch, most of a
1,000-switch EOS or NVUE render. This writer emits what ``yaml.safe_dump(data, sort_keys=True,
default_flow_style=False)`` lays out (mappings sorted, sequences not indented under their key) in a single pass.
A string stays plain only when no YAML 1.1 or 1.2 resolver could read it as anything but that string (it starts
with a letter, holds only letters, digits and ``_ . / -``, and is not a boolean or null word; or it is an IPv4
address or prefix); every other string is written double-quoted with JSON's escaping, which YAML's double-quoted
style shares. Lines are never folded.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

# Plain: a word starting with a letter, or an IPv4 address or prefix (more than one dot: no number resolver
# matches it).
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*|[0-9]{1,3}(\.[0-9]{1,3}){3}(/[0-9]{1,2})?")
# Words YAML 1.1 resolves to booleans or null (PyYAML's resolver; y/n only in some other loaders).
_RESERVED = frozenset(
    w for word in ("yes", "no", "true", "false", "on", "off", "null", "y", "n")
    for w in (word, word.capitalize(), word.upper())
)

# Characters a YAML double-quoted scalar may not hold raw: outside YAML's printable set, or line breaks YAML 1.1
# folds (NEL, LS, PS). JSON has already escaped the C0 controls, the quote and the backslash.
_UNPRINTABLE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


@functools.lru_cache(maxsize=65536, typed=True)  # typed: 1 and True are equal keys
def scalar(value: object) -> str:
    """One scalar as YAML: plain where unambiguous, else double-quoted (memoised: configs repeat their words)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and value not in _RESERVED:
            return value
        return _UNPRINTABLE.sub(_escape, json.dumps(value, ensure_ascii=False))
    raise TypeError(f"block_yaml writes str, int, bool, None, dicts and lists, not {type(value).__name__}")


def _write(value: dict[Any, Any] | list[Any] | tuple[Any, ...], indent: str, out: list[str]) -> None:
    """Append the lines of a non-empty collection at ``indent`` (a list of lines: no generator chains)."""
    if type(value) is dict:
        for key in sorted(value):
            item = value[key]
            if type(item) in _COLLECTIONS and item:
                out.append(f"{indent}{scalar(key)}:")
                _write(item, indent if type(item) is not dict else indent + "  ", out)
            else:
                out.append(f"{indent}{scalar(key)}: {_leaf(item)}")
        return
    for item in value:
        if type(item) in _COLLECTIONS and item:
            start = len(out)
            _write(item, indent + "  ", out)
            out[start] = f"{indent}- {out[start][len(indent) + 2:]}"
        else:
            out.append(f"{indent}- {_leaf(item)}")


_COLLECTIONS = (dict, list, tuple)


def _leaf(value: object) -> str:
    if type(value) is dict:
        return "{}"
    if type(value) in (list, tuple):
        return "[]"
    return scalar(value)


def dump(data: dict[str, Any] | list[Any]) -> str:
    """The document's text, ending in a newline."""
    if not data:
        return _leaf(data) + "\n"
    out: list[str] = []
    _write(data, "", out)
    return "\n".join(out) + "\n"
