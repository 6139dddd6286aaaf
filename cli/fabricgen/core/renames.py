"""Telling a renamed object from one removed and another added, by where it stands: the one rule NetBox sync
(which PATCHes a renamed device, rack or location in place) and plan (which lists a renamed device as moved, its
files and rows compared with the ones it had) share. A renamed row (``facility.rows[].name``) renames its racks and
their top-of-rack switches; a renamed node group (``nodes[].name``) its nodes; each keeps its rack, U, face and
type. A device is matched place first (:func:`by_place_then_name`): the one standing where the plan puts a device of
its type is that device, whatever either is named, so a node group whose ``start`` moved renames the boxes where they
stand (their serials, journals and files stay with them) instead of moving each one a slot."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any


def renames(wanted: Mapping[Any, Hashable], held: Mapping[Any, Hashable]) -> dict[Any, Any]:
    """Which held object (key -> where it stands) is which wanted one (key -> where it stands): a pair only
    where exactly one of each stands at a place (None: no place); where two could be it, none is guessed.
    New key -> old key."""
    new_at: dict[Hashable, list[Any]] = {}
    old_at: dict[Hashable, list[Any]] = {}
    for keys, places in ((new_at, wanted), (old_at, held)):
        for key, place in places.items():
            if place is not None:
                keys.setdefault(place, []).append(key)
    return {new[0]: old_at[place][0] for place, new in new_at.items() if len(new) == 1
            and len(old_at.get(place, ())) == 1}


def by_place_then_name(wanted: Mapping[Any, Hashable], held: Mapping[Any, Hashable]) -> dict[Any, Any]:
    """Which held record (key -> where it stands, None: nowhere told) is which wanted one: first by place, over
    every record whether or not its key is still wanted (:func:`renames`: one of each at a place), then by key for
    the wanted ones no place gave a record, from the records no place took. New key -> old key (equal: kept)."""
    pairs = renames(wanted, held)
    taken = set(pairs.values())
    return pairs | {key: key for key in wanted if key not in pairs and key in held and key not in taken}


def occupants(held: Iterable[tuple[Hashable, str]], named: Iterable[str]) -> dict[Hashable, frozenset[str]]:
    """Each container's (a rack's, a location's) occupants among ``named`` (from (container, occupant) pairs): what
    tells a container apart across a rename, as the devices that keep their names stand in it before and after."""
    names = set(named)
    inside: dict[Hashable, set[str]] = {}
    for container, occupant in held:
        if occupant in names:
            inside.setdefault(container, set()).add(occupant)
    return {container: frozenset(members) for container, members in inside.items()}


Place = tuple[str, ...]  # where a device stands: its rack first, then what else tells it (U, face, type)


def renamed_devices(before: Mapping[str, Place], after: Mapping[str, Place]) -> dict[str, str]:
    """The devices of ``before`` (name -> place, "" rack: not racked) that ``after`` names otherwise, old name ->
    new name: first the racks renamed (a rack ``after`` names anew holding the same devices that keep their names as
    one ``before`` no longer names), then each device by :func:`by_place_then_name`, its rack as renamed, as NetBox
    sync pairs its records. A name may pass from one device to another (a shifted group's chain ``gpu001 -> gpu002,
    gpu002 -> gpu003``, a swap): each device keeps its own old name as key."""
    kept = before.keys() & after.keys()
    racks_before = {p[0] for p in before.values()} - {p[0] for p in after.values()}
    racks_after = {p[0] for p in after.values()} - {p[0] for p in before.values()}
    held = occupants(((p[0], name) for name, p in before.items() if p[0] in racks_before), kept)
    planned = occupants(((p[0], name) for name, p in after.items() if p[0] in racks_after), kept)
    rack = {old: new for new, old in renames(planned, held).items()}

    def where(place: Place, racks: Mapping[str, str]) -> Place | None:
        return (racks.get(place[0], place[0]), *place[1:]) if place[0] else None

    pairs = by_place_then_name({name: where(p, {}) for name, p in after.items()},
                               {name: where(p, rack) for name, p in before.items()})
    return {old: new for new, old in sorted(pairs.items()) if new != old}
