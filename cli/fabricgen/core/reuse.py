"""Serialized bytes the last apply wrote, taken again where exactly what their serializer reads is unchanged.

Why: at 16,384 GPUs a one-node change re-renders every row's cable workbook and PDF (~3.8 s of CPU), though
the change touches one or two rows. The serializers are pure functions of their input, so a file whose input is
the one the last apply serialized holds the bytes this run would make.

How a reuse is kept from ever being wrong:
- A render key (:func:`render_key`) is the sha256 of the serializer's name, the code fingerprint of fabricgen
  (its code, data and templates, and the versions of Python and the libraries that shape output: the writer's
  version, whatever changed in it) and the digest of a canonical encoding of every value the serializer reads,
  which the renderer builds (:func:`canonical`: injective, so equal bytes are equal values, types included).
- apply records each keyed artifact's key with the sha256 of its bytes (``last-run.json``); the next plan or apply
  offers a file's bytes under its key only when the file in OUT still hashes to that sha256 (read without
  following a symlink: ``outdir/lastrun.py``, :func:`~fabricgen.outdir.lastrun.prior_renders`). A file edited,
  replaced or removed since is serialized again.

Renderers stay pure: :func:`reused` returns what the serializer would return, from the offered bytes or by
calling it. The offer is set by the render stage (:func:`offered`) around its renderers, before it forks its
workers, who inherit it as they inherit the topology.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from fabricgen.core.artifacts import Artifact


@dataclass(frozen=True)
class Offer:
    """What a render may take again: the code fingerprint keys are made with, and the bytes by their key."""

    code: str = ""
    by_key: Mapping[str, bytes] = field(default_factory=dict)


_offer = Offer()  # set by offered() for the renderers of one render, inherited by its forked workers


@contextmanager
def offered(offer: Offer) -> Iterator[None]:
    """Renderers called inside take ``offer``'s bytes where their key matches, and key with its code."""
    global _offer
    previous, _offer = _offer, offer
    try:
        yield
    finally:
        _offer = previous


Plain = str | int | float | bool | bytes | None | tuple["Plain", ...] | list["Plain"]


def canonical(value: Plain) -> bytes:
    """The bytes a render key digests: ``marshal`` format 2 of plain values (str, int, float, bool, None, bytes and
    tuples or lists of them). It is injective (``marshal.loads`` gives the value back, its types with it: ``1``,
    ``1.0``, ``True`` and ``"1"`` differ, floats to the bit), format 2 writes no back-references (so equal values
    give equal bytes, whatever objects they share), and it refuses any other object, str and int subclasses
    included (ValueError), so no object's own encoding can make two different inputs one key. It changes with
    Python's version, which the code fingerprint in the key holds."""
    return marshal.dumps(value, 2)


def render_key(serializer: str, *inputs: str) -> str:
    """The key of one serialization: ``serializer`` (a stable name) over ``inputs`` (digests of the
    :func:`canonical` bytes of what it reads), with the code fingerprint of the render's offer."""
    return hashlib.sha256("\0".join((serializer, _offer.code, *inputs)).encode()).hexdigest()


def reused(path: str, key: str, serialize: Callable[[], bytes], mode: int = 0o644) -> Artifact:
    """The artifact at ``path``: the offered bytes of ``key`` when there are any, else ``serialize()``; it carries
    its key, which apply records with its sha256."""
    content = _offer.by_key.get(key)
    return Artifact(path, serialize() if content is None else content, mode, render_key=key)
