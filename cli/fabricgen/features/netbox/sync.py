"""``fabricgen netbox sync``: the cluster put into a running NetBox through its REST API (pynetbox), so a second
run changes only what the spec changed.

Every object is found by its natural key (site and VLAN group by slug, location by slug in the site, rack and device
by name in the site, interface by device and name, cable by its ends (A and B interfaces in connector order) among
fabricgen's cables of the site, so a relabelled cable is updated in place, VRF by RD (one per site), prefix and IP
address by value in that VRF, ASN by number, VLAN by group and VID, the shared objects
by slug), compared field by field with what the import set (:func:`render.import_set`, the same rows as the CSV
files) wants, and only the differences are sent, in bulk (NetBox takes a list on POST, PATCH and DELETE). Every
object fabricgen creates carries the ``fabricgen`` tag, as does every object of the CSV set, so a sync over an
imported site takes it over; only tagged objects of this site are ever updated or deleted, and ``status`` only when
created (CREATE_ONLY: the crews move it on). A device type NetBox already holds must have templates for every port
fabricgen names, or the sync stops before writing devices (a type fabricgen made gets the ones it lacks). An object
found at fabricgen's key without the tag belongs to someone else: a parent (site, location, rack, manufacturer, role,
device type, RIR, ASN, VLAN group, VRF, prefix) is used as it is; a device or IP address is a conflict that stops the
sync before that object type is written, as does an untagged cable on a port fabricgen cables before any cable is
(``--dry-run`` finds them without writing). Manufacturers, roles, device types, the RIR and ASNs are shared
by every cluster of a NetBox: created when missing, never changed or deleted.

Beyond the CSV set: interface ``speed`` (the link's, in kbit/s) on every cabled port, templated ones included;
``mgmt_only``; each device's primary and OOB address. A physical cable is one NetBox cable, as in the CSV set
(:func:`render.netbox_cables`): a cage pair's links or a splitter's legs are its connectors in order,
``trunk-<n>c1p`` (connector k of side A carries link k to connector k of side B), so each link's two interfaces
trace to each other.

Each write is cut into batches that cost NetBox at most one request's budget (request_costs.yaml); a batch NetBox
does not answer in time (a proxy's 502/504, a worker killed at gunicorn's timeout) is read back, as it may have been
committed, and what is missing sent again in halves.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import count
from typing import Any, TypeVar

from netaddr import IPNetwork

from fabricgen.core.errors import FabricgenError
from fabricgen.core.renames import by_place_then_name, occupants, renames
from fabricgen.features.netbox.render import (
    DEVICE_COLUMN,
    DEVICE_FIELD,
    FACEPLATE,
    TAG,
    TAG_COLOUR,
    TAG_DESCRIPTION,
    TAG_WEIGHT,
    ImportSet,
    budgeted,
    clamp,
    import_set,
    netbox_cables,
    request_costs,
    slug,
    templated_ports,
)
from fabricgen.model.topology import Topology
from fabricgen.spec import catalog

# Fields sync sends when it creates an object but never compares or changes afterwards: a cable's or device's
# lifecycle (planned -> connected/active) is the field crews' to move on, and a sync must not put it back
CREATE_ONLY = frozenset({"status"})
# Answers that say a write ran past a timeout in front of NetBox (a proxy's 502/504, 503 while a worker restarts):
# the request may still have been committed (a bulk write is one transaction: all of it or none). gunicorn itself
# answers a worker it aborts at its timeout with its own HTML 500 page (NetBox answers an API request's exception in
# JSON: netbox/middleware.py, handle_rest_api_exception), and on the harness two of four bulk creates it aborted so
# had been committed (the abort came while NetBox rendered its answer).
OVERRUN_STATUS = frozenset({502, 503, 504})
QUERY_VALUES = 100  # values of one filter per GET (a URL stays short)
# The oldest NetBox sync writes to: cable profiles (Cable.profile) came in 4.5; an older NetBox drops the field, so a
# trunk's links trace to every far lane and every later sync sees the profile differ and writes it again (review D6)
MINIMUM_RELEASE = (4, 5)
INTERFACE = "dcim.interface"
TYPE_FACTS = ("is_full_depth", "weight", "weight_unit")  # a new device type's DCIM facts (render)

Json = dict[str, Any]


class SyncError(FabricgenError):
    """NetBox refused a request, or holds objects at fabricgen's keys that fabricgen did not create; ``partial``
    when NetBox already took writes of this run (a sync run again goes on from there)."""

    partial = False

    @property
    def outcome(self) -> str:
        if self.partial:
            return "NetBox keeps what this sync wrote before the error; a sync run again finishes the rest"
        return super().outcome


class OverrunError(Exception):
    """A write NetBox did not answer in time: the proxy's 502/504, or the connection dropped (gunicorn killed its
    worker at its timeout)."""


@dataclass
class Changes:
    """What one object type needs: new payloads, (id, changed fields), ids to delete."""

    create: list[tuple[Any, Json]] = field(default_factory=list)
    update: list[Json] = field(default_factory=list)
    delete: list[int] = field(default_factory=list)


@dataclass
class Report:
    """Counts per object type (create, update, delete), requests by method, batches NetBox did not answer in time
    by endpoint (each read back and sent again in halves), seconds."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    overruns: Counter[str] = field(default_factory=Counter)
    renamed: list[str] = field(default_factory=list)  # "device oob-l01 -> oob-k01": patched in place
    moved: list[str] = field(default_factory=list)  # "device hgx01: L01 U2 front -> L01 U3 front": patched in place
    seconds: float = 0.0
    dry_run: bool = False

    def add(self, kind: str, action: str, n: int) -> None:
        if n:
            self.counts.setdefault(kind, Counter())[action] += n

    @property
    def writes(self) -> int:
        return sum(n for method, n in self.requests.items() if method != "GET")

    @property
    def changes(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())


def token_value(text: str) -> str:
    """The token from a token file or NETBOX_TOKEN: a bare key (v1 40 hex, v2 ``nbt_<key>.<token>``) or a whole
    Authorization value (``Bearer nbt_...``, ``Token <hex>``); pynetbox adds the scheme itself."""
    value = text.strip()
    for scheme in ("Bearer ", "Token "):
        if value.startswith(scheme):
            value = value[len(scheme):].strip()
    if not value or any(c.isspace() for c in value):
        raise SyncError("the NetBox token is empty or not one line")
    return value


def _value(v: Any) -> Any:
    """A NetBox field as the comparison sees it: a choice by its value, a related object by its id, tags by id."""
    if isinstance(v, dict):
        if "value" in v and "label" in v:
            return v["value"]
        if "id" in v:
            return v["id"]
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and isinstance(v[0], dict) and "object_id" in v[0]:
            return [(t["object_type"], t["object_id"]) for t in v]
        return sorted(_value(x) for x in v)
    if isinstance(v, float):
        return round(v, 2)
    return "" if v is None else v


def _differs(want: Any, have: Any) -> bool:
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return any(_differs(v, have.get(k)) for k, v in want.items())
    if isinstance(want, list) and want and isinstance(want[0], dict) and "object_id" in want[0]:
        return bool([(t["object_type"], t["object_id"]) for t in want] != _value(have))
    if isinstance(want, list):
        return bool(sorted(_value(x) for x in want) != _value(have))
    if isinstance(want, float | int) and not isinstance(want, bool) and isinstance(have, float | int):
        return round(float(want), 2) != round(float(have), 2)
    return bool(("" if want is None else want) != _value(have))


def _stand_in(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v < 0


T = TypeVar("T")


def _chunked(items: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


class NetBox:
    """pynetbox with every request counted; in a dry run, writes are not sent and new objects get stand-in ids."""

    def __init__(self, url: str, token: str, dry_run: bool, report: Report) -> None:
        try:
            import pynetbox
            import requests
        except ImportError as exc:
            raise SyncError("netbox sync needs pynetbox: pip install 'fabricgen[netbox]'") from exc
        self.report = report
        self.dry_run = dry_run
        session = requests.Session()
        session.hooks["response"].append(self._count)
        self.api = pynetbox.api(url.rstrip("/"), token=token, threading=True)
        self.api.http_session = session
        self._stand_ins = count(-1, -1)
        self._request_error = pynetbox.RequestError

    def require_release(self) -> None:
        """Refuse a NetBox older than MINIMUM_RELEASE before anything is read or written (its API-Version header:
        ``major.minor``)."""
        answer = self._call("reading its API version", lambda: self.api.version)
        if problem := release_problem(str(answer or "")):
            raise SyncError(problem)

    def stand_in(self) -> int:
        """An id for an object a dry run would create (negative: never one of NetBox's)."""
        return next(self._stand_ins)

    def _count(self, response: Any, *_: Any, **__: Any) -> None:
        self.report.requests[response.request.method] += 1

    def _endpoint(self, path: str) -> Any:
        app, name = path.split(".")
        return getattr(getattr(self.api, app), name)

    def _call(self, what: str, action: Callable[[], Any], overrun: bool = False) -> Any:
        """``action``'s answer; with ``overrun`` (a write), a timeout in front of NetBox raises OverrunError."""
        try:
            return action()
        except self._request_error as exc:
            if overrun and _overran(exc.req):
                raise OverrunError(f"HTTP {exc.req.status_code}") from exc
            error = SyncError(f"NetBox refused {what}: {exc.error}")
        except OSError as exc:
            if overrun:
                raise OverrunError(str(exc)) from exc
            error = SyncError(f"cannot reach NetBox ({what}): {exc}")
        error.partial = self.report.writes > 0
        raise error

    def read(self, path: str, fields: str, **filters: Any) -> list[Json]:
        """Every object of an endpoint matching ``filters`` (a list value is split over several GETs)."""
        if any(_stand_in(v) for v in filters.values()):
            return []  # an object a dry run would create: NetBox holds nothing under it
        filters = {k: [x for x in v if not _stand_in(x)] if isinstance(v, list) else v for k, v in filters.items()}
        lists = {k: v for k, v in filters.items() if isinstance(v, list)}
        if len(lists) > 1:
            raise ValueError("one list filter per read")
        endpoint = self._endpoint(path)

        def get(query: dict[str, Any]) -> list[Json]:
            found: list[Json] = self._call(f"reading {path}", lambda: [dict(r) for r in endpoint.filter(
                fields=fields, limit=1000, **query)])
            return found

        if not lists:
            return get(filters)
        (name, values), = lists.items()
        return [o for part in _chunked(sorted(set(values)), QUERY_VALUES) for o in get({**filters, name: part})]

    def write(self, path: str, changes: Changes, seconds: Callable[[Json], float] | None = None) -> dict[Any, int]:
        """Deletes, updates, then creates, in batches that each cost NetBox at most the request budget
        (``seconds``: one object's cost, a payload or ``{"id": ...}`` for a deletion; by default its type's,
        request_costs.yaml); the new objects' ids by key (stand-ins in a dry run)."""
        if self.dry_run:
            return {key: self.stand_in() for key, _ in changes.create}
        endpoint = self._endpoint(path)
        each = request_costs().of(path.split(".")[1])
        cost = seconds or (lambda _: each)
        made: dict[Any, int] = {}
        self._batches(f"deleting {path}", [{"id": i} for i in changes.delete], cost,
                      lambda b: endpoint.delete([o["id"] for o in b]),
                      lambda b: self._still_there(path, b))
        self._batches(f"updating {path}", changes.update, cost, endpoint.update, lambda b: b)
        for batch, created in self._batches(f"creating {path}", changes.create, lambda item: cost(item[1]),
                                            lambda b: endpoint.create([p for _, p in b]),
                                            lambda b: self._not_created(endpoint, b, made)):
            made.update({key: int(record.id) for (key, _), record in zip(batch, created, strict=True)})
        return made

    def _batches(self, what: str, items: list[T], seconds: Callable[[T], float], send: Callable[[list[T]], Any],
                 unsettled: Callable[[list[T]], list[T]]) -> list[tuple[list[T], Any]]:
        """Send ``items`` in budgeted batches; a batch that overruns is re-read (``unsettled``: what NetBox did not
        commit of it) and the rest sent again in halves, down to one object. (batch, answer) of each sent batch."""
        queue = deque(budgeted(items, seconds, request_costs().budget_s))
        answers = []
        while queue:
            batch = queue.popleft()
            try:
                answers.append((batch, self._call(f"{what} ({len(batch)})", partial(send, batch), overrun=True)))
            except OverrunError as exc:
                self.report.overruns[what] += 1
                rest = unsettled(batch)
                if rest and len(batch) == 1:
                    error = SyncError(f"NetBox did not answer {what} of one object in time ({exc}): raise gunicorn's "
                                      "timeout and the proxy's read timeout (README \"NetBox sync\")")
                    error.partial = True
                    raise error from exc
                half = (len(rest) + 1) // 2
                queue.extendleft(part for part in (rest[half:], rest[:half]) if part)
        return answers

    def _still_there(self, path: str, batch: list[Json]) -> list[Json]:
        """Of a deletion that overran, the objects NetBox still holds."""
        held = {o["id"] for o in self.read(path, "id", id=[o["id"] for o in batch])}
        return [o for o in batch if o["id"] in held]

    def _not_created(self, endpoint: Any, batch: list[tuple[Any, Json]], made: dict[Any, int]
                     ) -> list[tuple[Any, Json]]:
        """Of a creation that overran, what NetBox did not make: NetBox's newest objects of the type matched to the
        payloads field by field (a bulk create is one transaction, so it made all of them or none); the ones made go
        into ``made``."""
        fields = sorted({"id", *(k for _, p in batch for k in p)} - {"tags"})
        newest: list[Json] = self._call("reading back an unanswered create", lambda: [dict(r) for r in endpoint.filter(
            ordering="-id", limit=len(batch), offset=0, fields=",".join(fields))])
        rest = []
        for key, payload in batch:
            found = next((o for o in newest if not any(_differs(v, o.get(k)) for k, v in payload.items()
                                                       if k != "tags")), None)
            if found is None:
                rest.append((key, payload))
            else:
                made[key] = int(found["id"])
                newest.remove(found)
        return rest


class Sync:
    """One run: each object type read, compared and written in NetBox's dependency order; deletions of objects
    others depend on come last, in reverse order."""

    def __init__(self, topology: Topology, netbox: NetBox, report: Report) -> None:
        self.topology = topology
        self.nb = netbox
        self.report = report
        self.imports: ImportSet = import_set(topology)
        self.site_slug = slug(topology.cluster.metadata.site)
        self.tag = 0
        self.site = 0
        self.site_have: Json = {}  # the site as NetBox held it before this run (empty: made now)
        self.vrf = 0
        self.ids: dict[str, dict[Any, int]] = {}
        # deletions run at the end, reversed: (endpoint, deletions, an object's cost)
        self.deferred: list[tuple[str, Changes, Callable[[Json], float] | None]] = []
        self.type_ports: dict[int, int] = {}  # device type id -> the ports its templates make
        self.devices_have: dict[str, Json] = {}  # by the plan's names, once matched (_devices)
        self.devices_held: dict[str, Json] = {}  # by their names, as NetBox held them
        self.templated: set[str] = set()
        self.retyped: set[str] = set()
        self.port_cables: dict[int, Json] = {}  # interface id -> the cable NetBox holds on it (id, label)

    # -- the generic step ------------------------------------------------------------------------------------

    def _tagged(self, obj: Json) -> bool:
        return self.tag in {t.get("id") for t in obj.get("tags") or ()}

    def reconcile(self, kind: str, path: str, want: dict[Any, Json], have: dict[Any, Json], *,
                  owned: Callable[[Json], bool] | None = None, shared: bool = False, tagged: bool = True,
                  delete: Iterable[Json] = (), defer_delete: bool = True, conflict: bool = False,
                  seconds: Callable[[Json], float] | None = None) -> dict[Any, int]:
        """Create what is missing, update what fabricgen owns and differs, delete what fabricgen owns and the spec
        no longer has (``delete``: the candidates, e.g. the tagged objects of this site). Ids by key. With
        ``conflict``, an object at a wanted key that fabricgen does not own stops the sync before this type is
        written. ``seconds``: what one object costs NetBox, for the batches (NetBox.write)."""
        owned = owned or self._tagged
        changes = Changes()
        ids: dict[Any, int] = {}
        conflicts = []
        for key, payload in want.items():
            obj = have.get(key)
            if obj is None:
                changes.create.append((key, {**payload, "tags": [self.tag]} if tagged else payload))
                continue
            ids[key] = int(obj["id"])
            if shared:
                continue
            if not owned(obj):
                if conflict:
                    conflicts.append(f"{kind} {_key_text(key)}")
                continue
            diff = {k: v for k, v in payload.items() if k not in CREATE_ONLY and _differs(v, obj.get(k))}
            if diff:
                changes.update.append({"id": obj["id"], **diff})
        if conflicts:
            raise self._not_ours(kind, conflicts)
        kept = {ids[k] for k in want if k in ids}
        gone = sorted({int(o["id"]) for o in delete if owned(o)} - kept)
        if defer_delete:
            self.deferred.append((path, Changes(delete=gone), seconds))
        else:
            changes.delete = gone
        self.report.add(kind, "create", len(changes.create))
        self.report.add(kind, "update", len(changes.update))
        self.report.add(kind, "delete", len(gone))
        ids |= self.nb.write(path, changes, seconds)
        return ids

    # -- the object types, in dependency order ---------------------------------------------------------------

    def run(self) -> None:
        self._tag_and_field()
        self._site()
        self._locations()
        self._shared_dcim()
        self._racks()
        self._devices()
        self._interfaces()
        self._cables()
        self._ipam()
        for path, changes, seconds in reversed(self.deferred):
            self.nb.write(path, changes, seconds)

    def _tag_and_field(self) -> None:
        tags = {t["slug"]: t for t in self.nb.read("extras.tags", "id,slug", slug=TAG)}
        ids = self.reconcile("tags", "extras.tags", {TAG: {
            "name": TAG, "slug": TAG, "color": TAG_COLOUR, "weight": TAG_WEIGHT, "description": TAG_DESCRIPTION}},
            tags, shared=True, tagged=False)
        self.tag = ids[TAG]
        field_row = self.imports.records("00-custom-fields")[0]
        have = {f["name"]: f for f in self.nb.read("extras.custom_fields", "id,name", name=DEVICE_FIELD)}
        self.reconcile("custom fields", "extras.custom_fields", {DEVICE_FIELD: {
            "name": DEVICE_FIELD, "label": field_row["label"], "type": "text", "object_types": ["dcim.device"],
            "unique": True, "search_weight": 1000, "filter_logic": "exact", "weight": 100,
            "description": field_row["description"]}}, have, shared=True, tagged=False)

    def _site(self) -> None:
        row = self.imports.records("01-sites")[0]
        have = {s["slug"]: s for s in self.nb.read("dcim.sites", "id,slug,name,status,description,asns,tags",
                                                   slug=self.site_slug)}
        self.site_have = have.get(self.site_slug, {})
        self.site = self.reconcile("sites", "dcim.sites", {self.site_slug: {
            "name": row["name"], "slug": row["slug"], "status": row["status"], "description": row["description"]}},
            have)[self.site_slug]

    def _renamed(self, kind: str, want: Mapping[Any, Json], have: dict[Any, Json],
                 want_place: Callable[[Any, Json], Hashable], have_place: Callable[[Json], Hashable]
                 ) -> dict[Any, Json]:
        """``have`` with each of fabricgen's objects the plan no longer names, that stands where exactly one object
        the plan names and NetBox lacks stands, under that new key: reconcile then PATCHes its name (and whatever
        else changed) in place, so its NetBox id, the data people added to it and what hangs on it survive a
        rename (a renamed row renames its racks, its location and its top-of-rack switches). ``want_place`` /
        ``have_place``: where a planned or a held object stands (None: nowhere it can be told by)."""
        gone = {key: have_place(o) for key, o in have.items() if key not in want and self._tagged(o)}
        pairs = renames({key: want_place(key, p) for key, p in want.items() if key not in have}, gone)
        self.report.renamed += [f"{kind} {_key_text(old)} -> {_key_text(new)}" for new, old in sorted(pairs.items())]
        moved = set(pairs.values())
        return {**{key: o for key, o in have.items() if key not in moved}, **{new: have[old] for new, old in
                                                                            pairs.items()}}

    def _occupants(self, column: str, held_column: str) -> tuple[dict[Hashable, frozenset[str]],
                                                                  dict[Hashable, frozenset[str]]]:
        """By ``column`` (``location`` or ``rack``) of the plan's devices: each planned one's devices NetBox holds
        by name, and each held one's (by id) devices the plan names: a location or rack that holds the same of
        them before and after a sync is the same one, renamed."""
        records = self.imports.records("07-devices")
        planned = occupants(((str(r[column]), str(r["name"])) for r in records if r[column]), self.devices_have)
        held = occupants(((int(_value(o[held_column])), name) for name, o in self.devices_have.items()
                          if o.get(held_column)), (str(r["name"]) for r in records))
        return planned, held

    def _read_devices(self) -> None:
        self.devices_have = {o["name"]: o for o in self.nb.read(
            "dcim.devices", "id,name,role,device_type,status,site,location,rack,position,face,custom_fields,tags,"
            "primary_ip4,primary_ip6,oob_ip", site_id=self.site)}

    def _locations(self) -> None:
        self._read_devices()  # the devices they hold tell a renamed row's location (and its racks) apart
        have = {o["slug"]: o for o in self.nb.read("dcim.locations", "id,slug,name,site,status,tags",
                                                      site_id=self.site)}
        want = {r["name"]: {"site": self.site, "name": r["name"], "slug": r["slug"], "status": r["status"]}
                for r in self.imports.records("02-locations")}
        by_slug = {str(p["slug"]): name for name, p in want.items()}
        planned, held = self._occupants("location", "location")
        have = self._renamed("location", {p["slug"]: p for p in want.values()}, have,
                             lambda key, _: planned.get(str(by_slug[key])) or None,
                             lambda o: held.get(int(o["id"])) or None)
        ids = self.reconcile("locations", "dcim.locations", {p["slug"]: p for p in want.values()}, have,
                             delete=have.values())
        self.ids["locations"] = {by_slug[s]: i for s, i in ids.items()}

    def _shared_dcim(self) -> None:
        manufacturers = {str(r["slug"]): r for r in self.imports.records("03-manufacturers")}
        have = {o["slug"]: o for o in self.nb.read("dcim.manufacturers", "id,slug", slug=list(manufacturers))}
        made = self.reconcile("manufacturers", "dcim.manufacturers",
                              {s: {"name": r["name"], "slug": s} for s, r in manufacturers.items()}, have, shared=True)
        self.ids["manufacturers"] = made
        roles = {str(r["slug"]): r for r in self.imports.records("04-device-roles")}
        have = {o["slug"]: o for o in self.nb.read("dcim.device_roles", "id,slug", slug=list(roles))}
        made = self.reconcile("device roles", "dcim.device_roles",
                              {s: {"name": r["name"], "slug": s, "color": r["color"]} for s, r in roles.items()},
                              have, shared=True)
        self.ids["roles"] = {str(roles[s]["name"]): i for s, i in made.items()}
        self._device_types()

    def _device_types(self) -> None:
        maker = self.ids["manufacturers"]
        types = {(slug(str(d["manufacturer"])), str(d["model"])): d for d in self.imports.device_types}
        have = {(o["manufacturer"]["slug"], o["model"]): o for o in self.nb.read(
            "dcim.device_types", "id,model,slug,manufacturer,tags", manufacturer_id=list(maker.values()))}
        want = {key: {"manufacturer": maker[key[0]], "model": d["model"], "slug": d["slug"],
                      "u_height": d["u_height"], **{k: d[k] for k in TYPE_FACTS if k in d}}
                for key, d in types.items()}
        have |= self._retitled(want, have)
        new = [key for key in want if key not in have]
        # fabricgen's own types (tagged) that a sync stopped before finishing (review D2) get what they lack
        own = {key: have[key] for key in want if key in have and self._tagged(have[key])}
        self._templates_cover(types, {key: have[key] for key in want if key in have})
        made = self.reconcile("device types", "dcim.device_types", want, have, shared=True)
        self.ids["device types"] = {key[1]: i for key, i in made.items()}
        self.type_ports = {made[key]: templated_ports(d) for key, d in types.items()}
        # a type fabricgen creates gets its templates (NetBox makes a device's interfaces from them); an existing
        # type is used as it is, once its templates are known to make every port fabricgen names (of its own, the
        # missing ones made now)
        own_ids = {int(o["id"]): key for key, o in own.items()}
        for kind, path, key in (("interface templates", "dcim.interface_templates", "interfaces"),
                                ("console port templates", "dcim.console_port_templates", "console-ports"),
                                ("power port templates", "dcim.power_port_templates", "power-ports")):
            held = {(own_ids[_value(o["device_type"])], o["name"]) for o in self.nb.read(
                path, "id,device_type,name", device_type_id=list(own_ids))}
            self.reconcile(kind, path, {(t, port["name"]): {"device_type": made[t], **_template(key, port)}
                                        for t in (*new, *own) for port in types[t].get(key, ())
                                        if (t, port["name"]) not in held}, {}, shared=True)

    def _retitled(self, want: dict[tuple[str, str], Json], have: dict[tuple[str, str], Json]
                  ) -> dict[tuple[str, str], Json]:
        """fabricgen's own type under the bare catalog model (``QM9700``) an earlier fabricgen gave a switch whose
        ports keep the faceplate's names, renamed to its model and slug now (``QM9700 faceplate``; review D3: the
        bare model is the device-type library's key) in place, so its devices keep their type, ports and cables."""
        suffix = f" {FACEPLATE}"
        old = {key: o for key in want if key not in have and key[1].endswith(suffix)
               and (o := have.get((key[0], key[1].removesuffix(suffix)))) is not None and self._tagged(o)}
        if old:
            self.report.add("device types", "update", len(old))
            self.report.renamed += [f"device type {k[0]} {o['model']} -> {k[1]}" for k, o in sorted(old.items())]
            self.nb.write("dcim.device_types", Changes(update=[
                {"id": o["id"], "model": want[k]["model"], "slug": want[k]["slug"]} for k, o in sorted(old.items())]))
        return old

    def _templates_cover(self, types: dict[tuple[str, str], dict[str, Any]], existing: dict[tuple[str, str], Json]
                         ) -> None:
        """Stop when a device type NetBox already holds (the community library's, another cluster's node of the
        same model) has interface templates other than fabricgen's, in any name, label, type or management flag
        (review B7): its devices would get NetBox's ports, or fabricgen's beside them, and two clusters would
        rewrite each other's ports. A type fabricgen made (tagged) may lack some: a first sync stopped after the
        type (review D2: every later sync stopped on it) gets them made."""
        held: dict[int, dict[str, tuple[str, str, bool]]] = {}
        for t in self.nb.read("dcim.interface_templates", "id,device_type,name,label,type,mgmt_only",
                              device_type_id=[int(o["id"]) for o in existing.values()]):
            held.setdefault(_value(t["device_type"]), {})[str(t["name"])] = (
                str(t.get("label") or ""), str(_value(t["type"])), bool(t["mgmt_only"]))
        conflicts = []
        for key, obj in sorted(existing.items()):
            wanted = {str(p["name"]): (str(p.get("label", "")), str(p["type"]), bool(p["mgmt_only"]))
                      for p in types[key]["interfaces"]}
            if self._tagged(obj):  # fabricgen's own: a template it lacks is made (_device_types), not a conflict
                wanted = {n: w for n, w in wanted.items() if n in held.get(int(obj["id"]), {})}
            if (difference := template_difference(wanted, held.get(int(obj["id"]), {}))):
                conflicts.append(f"{key[0]} {key[1]} ({difference})")
        if conflicts:
            error = SyncError(f"NetBox holds {len(conflicts)} device types of fabricgen's names whose interface "
                              f"templates are not fabricgen's, so it stops before writing devices: "
                              f"{'; '.join(conflicts)} (hint: rename or remove that type in NetBox, or give the "
                              "catalog model or node profile another model name)")
            error.partial = self.nb.report.writes > 0
            raise error

    def _racks(self) -> None:
        locations = self.ids["locations"]
        have = {o["name"]: o for o in self.nb.read("dcim.racks", "id,name,site,location,status,u_height,width,tags",
                                                   site_id=self.site)}
        want = {r["name"]: {"site": self.site, "location": locations[str(r["location"])], "name": r["name"],
                            "status": r["status"], "u_height": r["u_height"], "width": r["width"]}
                for r in self.imports.records("06-racks")}
        planned, held = self._occupants("rack", "rack")
        have = self._renamed("rack", want, have, lambda key, _: planned.get(key) or None,
                             lambda o: held.get(int(o["id"])) or None)
        self.ids["racks"] = self.reconcile("racks", "dcim.racks", want, have, delete=have.values())

    def _devices(self) -> None:
        want = {}
        for r in self.imports.records("07-devices"):
            rack = str(r["rack"])
            want[str(r["name"])] = {
                "name": r["name"], "role": self.ids["roles"][str(r["role"])],
                "device_type": self.ids["device types"][str(r["device_type"])], "status": r["status"],
                "site": self.site, "location": self.ids["locations"][str(r["location"])] if r["location"] else None,
                "rack": self.ids["racks"][rack] if rack else None, "position": r["position"] or None,
                "face": r["face"] or None, "custom_fields": {DEVICE_FIELD: r[f"cf_{DEVICE_FIELD}"]}}
        held = self.devices_held = self.devices_have
        self._foreign_names(want, held)
        # place first, then name (core/renames.py): the record of fabricgen's standing where the plan puts a device
        # of its type is that device, whatever either is named (a node group whose start moved renames the boxes
        # where they stand, their serials and journals with them); a record no place took keeps its name's device
        pairs = by_place_then_name({name: _place(p) for name, p in want.items()},
                                   {name: _place(o) for name, o in held.items() if self._tagged(o)})
        self.report.renamed += [f"device {old} -> {new}" for old, new in sorted((o, n) for n, o in pairs.items())
                                if new != old]
        have = self.devices_have = {new: dict(held[old]) for new, old in pairs.items()}  # step 1 changes the copies
        self._free_first(want, have, held)
        type_of = {int(o["id"]): _value(o["device_type"]) for o in held.values()}
        costs = request_costs()

        def seconds(device: Json) -> float:  # made or deleted with every port of its type
            kind = device.get("device_type", type_of.get(int(device["id"]), 0) if "id" in device else 0)
            return costs.of("devices") + costs.port_s * self.type_ports.get(int(kind), 0)

        self.ids["devices"] = self.reconcile("devices", "dcim.devices", want, have, delete=held.values(),
                                             conflict=True, seconds=seconds)
        self.templated = {name for name in want if name not in have}  # NetBox made their interfaces just now
        # a device of fabricgen's whose type changed (another switch model, another NOS: other port names): NetBox
        # does not make the new type's ports nor remove the old ones (review D8), so sync does both
        self.retyped = {name for name, p in want.items() if name in have and self._tagged(have[name])
                        and _differs(p["device_type"], have[name].get("device_type"))}

    def _foreign_names(self, want: Mapping[str, Json], held: Mapping[str, Json]) -> None:
        """Stop before writing devices when a device fabricgen did not make (no tag) bears a name the plan gives
        (NetBox keeps a device name unique per site and tenant, ignoring case): fabricgen neither takes it over nor
        renames one of its own onto it."""
        names = {name.lower() for name in want}
        foreign = sorted(name for name, o in held.items() if name.lower() in names and not self._tagged(o))
        if foreign:
            raise self._not_ours("devices", foreign)

    def _not_ours(self, kind: str, keys: list[str]) -> SyncError:
        return self._stop(f"NetBox holds {len(keys)} {kind} at fabricgen's keys that fabricgen did not make (no "
                          f"'{TAG}' tag), so it leaves them alone and stops before writing {kind}", keys,
                          f"tag them '{TAG}' to hand them to fabricgen, or move them")

    def _stop(self, reason: str, items: Sequence[str], hint: str, separator: str = ", ") -> SyncError:
        """The error that stops a sync, naming the first 20 items in its way; partial when writes went before it."""
        listed = separator.join(items[:20]) + (" ..." if len(items) > 20 else "")
        error = SyncError(f"{reason}: {listed} (hint: {hint})")
        error.partial = self.nb.report.writes > 0
        return error

    def _free_first(self, want: Mapping[str, Json], have: dict[str, Json], held: Mapping[str, Json]) -> None:
        """The first of a move's two steps, one bulk PATCH before any other device is written: every record of
        fabricgen's that stands in the units a device is moved or made to (NetBox checks a device's units one
        PATCH at a time, so A onto B's U while B moves away, or onto a record deleted only at the end, is refused)
        has its position cleared, and every one holding a name another record takes (a name swap, a renumbered
        group's chain) gets a temporary one (``fabricgen~<id>``) and no ``fabricgen_device`` (also unique); the
        devices' own updates then set place and name, in any order. A unit held by a device fabricgen did not make
        cannot be freed: all of them are one error before any device is written. Lists the moves (report)."""
        heights = self._heights(held)
        standing: dict[int, list[tuple[int, Span]]] = {}
        for o in held.values():
            if (span := _span(o, heights)) is not None:
                standing.setdefault(span[0], []).append((int(o["id"]), span))
        record = {int(o["id"]): o for o in held.values()}
        racks = {i: name for name, i in self.ids["racks"].items()}
        holder = {str(o["name"]).lower(): int(o["id"]) for o in held.values()}
        freed: dict[int, Json] = {}
        blocked = []
        for name, payload in sorted(want.items()):
            own = int(have[name]["id"]) if name in have else None
            if own is not None and (other := holder.get(name.lower(), own)) != own:
                freed.setdefault(other, {}).update(name=f"fabricgen~{other}", custom_fields={DEVICE_FIELD: None})
            target = _span(payload, heights)
            if target is None or (own is not None and target == _span(have[name], heights)):
                continue
            if own is not None:
                self.report.moved.append(f"device {name}: {_where(have[name], racks)} -> {_where(payload, racks)}")
            for rid, span in standing.get(target[0], ()):
                if rid != own and _overlap(span, target):
                    if self._tagged(record[rid]):
                        freed.setdefault(rid, {})["position"] = None
                    else:
                        blocked.append(f"{name} to {_where(payload, racks)}: {record[rid]['name']} stands there")
        if blocked:
            raise self._stop(f"{len(blocked)} devices cannot be moved or made where the plan puts them, as devices "
                             f"fabricgen did not make (no '{TAG}' tag) hold those units, so it stops before writing "
                             "devices", blocked, f"move those devices in NetBox, or tag them '{TAG}' to hand them to "
                             "fabricgen", "; ")
        if not freed:
            return
        self.report.add("devices, freed first", "update", len(freed))
        self.nb.write("dcim.devices", Changes(update=[{"id": rid, **fields} for rid, fields in sorted(freed.items())]))
        for o in have.values():  # as NetBox holds them now: the devices' updates set the rest
            o.update(freed.get(int(o["id"]), {}))

    def _heights(self, held: Mapping[str, Json]) -> dict[int, tuple[float, bool]]:
        """Device type id -> (U height, full depth): the plan's types from the import set, the other types of the
        site's devices read from NetBox (only for the types the plan lacks)."""
        plan = {str(d["model"]): (float(d["u_height"]), bool(d.get("is_full_depth", True)))
                for d in self.imports.device_types}
        heights = {i: plan[model] for model, i in self.ids["device types"].items() if model in plan}
        others = sorted({int(_value(o["device_type"])) for o in held.values()} - heights.keys())
        if others:
            heights |= {int(t["id"]): (float(t["u_height"]), bool(t["is_full_depth"])) for t in self.nb.read(
                "dcim.device_types", "id,u_height,is_full_depth", id=others)}
        return heights

    def _interfaces(self) -> None:
        devices = self.ids["devices"]
        name_of = {i: n for n, i in devices.items()}
        have = {(name_of[o["device"]["id"]], o["name"]): o for o in self.nb.read(
            "dcim.interfaces", "id,device,name,label,type,enabled,mgmt_only,speed,description,cable,tags",
            site_id=self.site) if o["device"]["id"] in name_of}
        self.port_cables = {int(o["id"]): o["cable"] for o in have.values() if o.get("cable")}
        names = self.imports.names
        speeds = {(d, names(d, p)): v for (d, p), v in port_speeds(self.topology).items()}
        cabled: dict[str, dict[str, str]] = {}  # device -> its cabled ports' names -> their faceplate labels
        for c in self.topology.cables:
            for end in (c.a, c.z):
                cabled.setdefault(end.device, {})[names(end.device, end.port)] = names.label(end.device, end.port)
        want: dict[tuple[str, str], Json] = {}
        by_type = {str(d["model"]): d["interfaces"] for d in self.imports.device_types}
        for r in self.imports.records("07-devices"):
            device = str(r["name"])
            for port, fields in split_cages(by_type[str(r["device_type"])], device, cabled).items():
                want[(device, port)] = fields
        for r in self.imports.records("08-interfaces"):
            want[(_device(r), str(r["name"]))] = {"label": r["label"], "type": r["type"],
                                                 "mgmt_only": r["mgmt_only"] == "true",
                                                 "description": r["description"]}
        for key, payload in want.items():  # an uncabled port's speed is cleared (review D8: it kept its old one)
            payload["speed"] = speeds.get(key)
        if self.nb.dry_run:  # a new device's interfaces come from its type's templates, as NetBox makes them
            templates = {(str(r["name"]), t["name"]): t for r in self.imports.records("07-devices")
                         for t in by_type[str(r["device_type"])]}
            have |= {k: {"id": self.nb.stand_in(), "device": {"id": devices[k[0]]}, "name": k[1],
                         "label": templates[k].get("label", ""), "type": p["type"], "enabled": True,
                         "mgmt_only": p["mgmt_only"], "speed": None, "description": "", "tags": []}
                     for k, p in want.items() if k[0] in self.templated and k in templates}
        # a port NetBox made from a template is the device's (fabricgen's): updated, never deleted
        owned_devices = {n for n, o in self.devices_have.items() if self._tagged(o)} | self.templated
        payloads = {k: {"device": devices[k[0]], "name": k[1], **p} for k, p in want.items()}
        self.ids["interfaces"] = self.reconcile(
            "interfaces", "dcim.interfaces", payloads, have, owned=lambda o: self._tagged(o) or (
                name_of.get(o["device"]["id"]) in owned_devices if "device" in o else True),
            delete=[o for k, o in have.items() if self._tagged(o) or k[0] in self.retyped])

    def _cables(self) -> None:
        """fabricgen's cables of the site, each found by its ends (its A and B interfaces in connector order: an
        interface holds one cable, so the ends name it), not by its label: a cable whose ends did not change keeps
        its NetBox object, its status, journal and comments when only its label, description or profile changed
        (review B1: renumbered cage-pair ids re-made 18 of lab-1su's cables, back to planned). A cable whose ends
        changed is replaced: NetBox re-traces the paths of new terminations only reliably on a new cable, and its
        interfaces must be free first, so these deletions run now, not at the end."""
        interfaces = self.ids["interfaces"]
        have = {int(o["id"]): o for o in self.nb.read(
            "dcim.cables", "id,label,type,status,color,length,length_unit,profile,description,tags",
            site_id=self.site, tag=TAG)}
        # the ends from NetBox's termination records (a cable's own a/b_terminations render every far object:
        # ~10 times slower to read), in connector order
        ends: dict[tuple[int, str], list[tuple[int, int, Json]]] = {}
        for t in self.nb.read("dcim.cable_terminations", "id,cable,cable_end,termination_type,termination_id,"
                              "connector", cable_id=list(have)):
            ends.setdefault((_value(t["cable"]), t["cable_end"]), []).append((t["connector"] or 0, t["id"], {
                "object_type": t["termination_type"], "object_id": t["termination_id"]}))
        for o in have.values():
            for side in ("A", "B"):
                o[f"{side.lower()}_terminations"] = [e for *_, e in sorted(ends.get((o["id"], side), []),
                                                                             key=lambda e: e[:2])]
        want = {}
        names = self.imports.names
        for cable in netbox_cables(self.topology.cables):
            first = cable.links[0]
            want[cable.label] = {
                "a_terminations": [{"object_type": INTERFACE, "object_id": interfaces[
                    (c.a.device, names(c.a.device, c.a.port))]} for c in cable.links],
                "b_terminations": [{"object_type": INTERFACE, "object_id": interfaces[
                    (c.z.device, names(c.z.device, c.z.port))]} for c in cable.links],
                "type": first.medium.netbox_type, "status": "planned", "label": cable.label,
                "color": first.medium.color.lower(), "length": cable.length, "length_unit": "m",
                "description": cable.description, **({"profile": cable.profile} if cable.profile else {})}
        self._foreign_cables(want, have)
        held = {cable_ends(o): o for o in have.values()}
        kept = {label: found for label, p in want.items() if (found := held.get(cable_ends(p))) is not None}
        each = request_costs().of("cables")  # a cable costs NetBox per link (its terminations and their paths)
        self.ids["cables"] = self.reconcile("cables", "dcim.cables", want, kept, delete=have.values(),
                                            defer_delete=False,
                                            seconds=lambda p: each * max(1, len(p.get("a_terminations", ()))))

    def _foreign_cables(self, want: dict[str, Json], have: dict[int, Json]) -> None:
        """Stop before writing cables when a port fabricgen cables holds a cable fabricgen did not make (no tag):
        NetBox would refuse the bulk create naming only its ids (review D5), and fabricgen leaves that cable alone."""
        names = {i: key for key, i in self.ids["interfaces"].items()}
        found = sorted({f"{names[end['object_id']][0]}:{names[end['object_id']][1]} "
                        f"(cable {cable.get('label') or cable.get('display') or '#' + str(cable['id'])})"
                        for p in want.values() for end in (*p["a_terminations"], *p["b_terminations"])
                        if (cable := self.port_cables.get(end["object_id"])) and int(cable["id"]) not in have})
        if found:
            raise self._stop(f"NetBox holds cables fabricgen did not make (no '{TAG}' tag) on {len(found)} ports "
                             "fabricgen cables, so it leaves them alone and stops before writing cables", found,
                             f"remove them, or tag them '{TAG}' to hand them to fabricgen, which then replaces them")

    def _ipam(self) -> None:
        rirs = {str(r["slug"]): r for r in self.imports.records("10-rirs")}
        have = {o["slug"]: o for o in self.nb.read("ipam.rirs", "id,slug", slug=list(rirs))}
        rir = self.reconcile("RIRs", "ipam.rirs", {s: {"name": r["name"], "slug": s,
                                                       "is_private": r["is_private"] == "true",
                                                       "description": r["description"]}
                                                   for s, r in rirs.items()}, have, shared=True)
        rir_of = {str(r["name"]): rir[s] for s, r in rirs.items()}
        asns = self.imports.records("11-asns")
        have = {o["asn"]: o for o in self.nb.read("ipam.asns", "id,asn", asn=[int(str(r["asn"])) for r in asns])}
        ids = self.reconcile("ASNs", "ipam.asns", {int(str(r["asn"])): {
            "asn": r["asn"], "rir": rir_of[str(r["rir"])], "description": r["description"]} for r in asns},
            have, shared=True)
        self._site_asns(sorted(ids.values()))
        self._vlans()
        self._vrf()
        self._prefixes()
        self._addresses()

    def _site_asns(self, asns: list[int]) -> None:
        """Link this cluster's ASNs to its site (NetBox's ``Site.asns``; review D7: the shared ASN objects said
        nothing of where they are used): added to what the site holds, never removed (a hand-linked ASN stays);
        only on fabricgen's own site. The CSV import cannot (SiteImportForm and ASNImportForm take no ASNs)."""
        held = [int(_value(a)) for a in self.site_have.get("asns") or ()]
        if self.site_have and not self._tagged(self.site_have):
            return
        missing = [a for a in asns if a not in held]
        if missing:
            self.report.add("site ASNs", "update", 1)
            self.nb.write("dcim.sites", Changes(update=[{"id": self.site, "asns": sorted({*held, *asns})}]))

    def _vlans(self) -> None:
        groups = self.imports.records("12-vlan-groups")
        have = {o["slug"]: o for o in self.nb.read("ipam.vlan_groups", "id,slug,name,scope_type,scope_id,description,"
                                                   "tags", scope_type="dcim.site", scope_id=self.site)}
        ids = self.reconcile("VLAN groups", "ipam.vlan_groups", {str(r["slug"]): {
            "name": r["name"], "slug": r["slug"], "scope_type": "dcim.site", "scope_id": self.site,
            "description": r["description"]} for r in groups}, have, delete=have.values())
        vlans = self.imports.records("13-vlans")
        have = {(o["group"]["slug"], o["vid"]): o for o in self.nb.read(
            "ipam.vlans", "id,site,group,vid,name,status,description,tags", group_id=list(ids.values()))}
        self.reconcile("VLANs", "ipam.vlans", {(str(r["group.slug"]), int(str(r["vid"]))): {
            "site": self.site, "group": ids[str(r["group.slug"])], "vid": r["vid"], "name": r["name"],
            "status": r["status"], "description": r["description"]} for r in vlans}, have, delete=have.values())

    def _vrf(self) -> None:
        """The cluster's VRF, by its RD (NetBox keeps VRF names non-unique): an untagged one is used as it is;
        fabricgen's is never deleted (a VRF outlives a sync that empties it, as the shared objects do)."""
        rows = self.imports.records("14-vrfs")
        if not rows:  # a cluster with no address plan
            return
        row = rows[0]
        rd = str(row["rd"])
        have = {o["rd"]: o for o in self.nb.read("ipam.vrfs", "id,name,rd,enforce_unique,description,tags", rd=rd)}
        self.vrf = self.reconcile("VRFs", "ipam.vrfs", {rd: {
            "name": row["name"], "rd": rd, "enforce_unique": row["enforce_unique"] == "true",
            "description": row["description"]}}, have)[rd]

    def _prefixes(self) -> None:
        """By prefix in the cluster's VRF; this site's tagged prefixes elsewhere (the global table, where an
        earlier fabricgen put them) are moved into it, or deleted."""
        rows = self.imports.records("15-prefixes")
        fields = "id,prefix,vrf,status,scope_type,scope_id,description,tags"
        have = {o["prefix"]: o for o in self.nb.read("ipam.prefixes", fields, prefix=[str(r["prefix"]) for r in rows],
                                                     vrf_id=self.vrf)}
        mine = self.nb.read("ipam.prefixes", fields, site_id=self.site, tag=TAG)
        have |= {o["prefix"]: o for o in mine if o["prefix"] not in have}
        self.reconcile("prefixes", "ipam.prefixes", {str(r["prefix"]): {
            "prefix": r["prefix"], "vrf": self.vrf, "status": r["status"], "scope_type": "dcim.site",
            "scope_id": self.site, "description": r["description"]} for r in rows}, have, delete=mine)

    def _addresses(self) -> None:
        rows = self.imports.records("16-ip-addresses")
        pools = [str(r["prefix"]) for r in self.imports.records("15-prefixes") if r["status"] == "container"]
        fields = "id,address,vrf,status,role,assigned_object_type,assigned_object_id,description,tags"
        # keyed by the address alone: NetBox's uniqueness in a VRF ignores the mask, so an address whose subnet
        # grew or shrank is updated in place (a new one beside the old would be refused as a duplicate); every
        # address of the cluster's VRF, not only those in today's pools: one a changed pool left behind is deleted
        # (review D8), not kept on fabricgen's ports
        have = {_host(o["address"]): o for o in self.nb.read("ipam.ip_addresses", fields, vrf_id=self.vrf)}
        interfaces = self.ids["interfaces"]
        # fabricgen's addresses on this cluster's ports in the global table (an earlier fabricgen's): moved into the
        # VRF, or deleted; a global address on another cluster's port is that cluster's
        ports = set(interfaces.values())
        have |= {_host(o["address"]): o for o in self.nb.read("ipam.ip_addresses", fields, parent=pools,
                                                              vrf_id="null", tag=TAG)
                 if o["assigned_object_id"] in ports and _host(o["address"]) not in have}
        want = {_host(r["address"]): {
            "address": r["address"], "vrf": self.vrf, "status": r["status"], "role": r["role"] or None,
            "assigned_object_type": INTERFACE, "assigned_object_id": interfaces[(_device(r), str(r["interface"]))],
            "description": r["description"]} for r in rows}
        self._release_marks(want, have)
        ids = self.reconcile("IP addresses", "ipam.ip_addresses", want, have, delete=have.values(), conflict=True)
        self._primary(rows, ids)

    def _release_marks(self, want: Mapping[str, Json], have: Mapping[str, Json]) -> None:
        """The first step of an address's move to another device's port (nodes that move by name take the
        addresses of their new order): NetBox refuses to reassign an address a device holds as its primary or OOB
        one ("Cannot reassign IP address while it is designated as the primary IP"), so those marks are cleared
        first, in one bulk PATCH of the devices, and :meth:`_primary` sets them where the plan puts them."""
        moving = {int(o["id"]) for key, o in have.items() if key in want and self._tagged(o) and _differs(
            want[key]["assigned_object_id"], o.get("assigned_object_id"))}
        released: dict[int, Json] = {}
        for device in (*self.devices_held.values(), *self.devices_have.values()):
            marks = {k: None for k in ("primary_ip4", "primary_ip6", "oob_ip")
                     if device.get(k) and int(_value(device[k])) in moving}
            if marks and self._tagged(device):
                released.setdefault(int(device["id"]), {}).update(marks)
                device.update(marks)  # as NetBox holds it now: _primary sets the marks again
        if released:
            self.report.add("device addresses, released first", "update", len(released))
            self.nb.write("dcim.devices", Changes(update=[{"id": i, **m} for i, m in sorted(released.items())]))

    def _primary(self, rows: list[dict[str, object]], ids: dict[Any, int]) -> None:
        """Each device's primary and OOB address, once its addresses exist."""
        want: dict[str, Json] = {}
        for r in rows:
            fields = want.setdefault(_device(r), {})
            if r["is_primary"] == "true":
                fields["primary_ip6" if IPNetwork(str(r["address"])).version == 6 else "primary_ip4"] = \
                    ids[_host(r["address"])]
            if r["is_oob"] == "true":
                fields["oob_ip"] = ids[_host(r["address"])]
        devices = self.ids["devices"]
        changes = Changes(update=[{"id": devices[name], **diff} for name, fields in sorted(want.items())
                                  if (diff := {k: v for k, v in fields.items() if _differs(
                                      v, self.devices_have.get(name, {}).get(k))})])
        self.report.add("device addresses", "update", len(changes.update))
        self.nb.write("dcim.devices", changes)


def _overran(answer: Any) -> bool:
    """A write's answer from what stands in front of NetBox, not from NetBox: a proxy's timeout or gunicorn's page
    for a worker it aborted."""
    code = int(answer.status_code)
    return code in OVERRUN_STATUS or (code == 500 and "json" not in answer.headers.get("Content-Type", ""))


def _template(kind: str, port: Json) -> Json:
    """A template's fields from its device-type entry: an interface's four (the entry may leave out a false
    ``mgmt_only`` or an empty label), a console or power port's as they are."""
    if kind != "interfaces":
        return port
    return {"name": port["name"], "label": port.get("label", ""), "type": port["type"], "mgmt_only": port["mgmt_only"]}


def release_problem(version: str) -> str:
    """Why sync will not write to a NetBox whose API says ``version`` ("" when it will)."""
    numbers = version.split(".")
    release = tuple(int(n) for n in numbers[:2]) if len(numbers) >= 2 and all(
        n.isdigit() for n in numbers[:2]) else None
    if release is not None and release >= MINIMUM_RELEASE:
        return ""
    needed = ".".join(map(str, MINIMUM_RELEASE))
    said = f"is version {version}" if release is not None else (
        f"gives an API version fabricgen cannot read ({version!r})" if version else "gives no API version")
    return (f"NetBox {said}, and netbox sync needs {needed} or newer (its cables' profile field, which keeps each "
            f"link of a cage pair or splitter tracing to its own far end) (hint: upgrade NetBox to {needed} or newer, "
            "or import the CSV set, README \"NetBox\")")


def cable_ends(cable: Json) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    """A cable's A and B terminations in connector order, as (object type, id): what pairs a wanted cable with the
    one NetBox holds."""
    return (tuple((t["object_type"], t["object_id"]) for t in cable["a_terminations"]),
            tuple((t["object_type"], t["object_id"]) for t in cable["b_terminations"]))


def _place(device: Json) -> Hashable:
    """Where a device stands, as NetBox holds or sync sends it: rack, U, face and type (None: not racked)."""
    if not device.get("rack") or device.get("position") in (None, ""):
        return None
    return (_value(device["rack"]), float(device["position"]), _value(device.get("face")),
            _value(device["device_type"]))


Span = tuple[int, frozenset[str], float, float]  # the units a device holds: rack id, faces, lowest U, one above top


def _span(device: Json, heights: Mapping[int, tuple[float, bool]]) -> Span | None:
    """The units a device (as NetBox holds or sync sends it) takes: both faces when its type is full depth; None
    when it holds none (not racked, no position, 0U)."""
    if not device.get("rack") or device.get("position") in (None, ""):
        return None
    height, full = heights.get(int(_value(device["device_type"])), (1.0, True))
    low = float(device["position"])
    faces = frozenset({"front", "rear"}) if full else frozenset({str(_value(device.get("face")))})
    return (int(_value(device["rack"])), faces, low, low + height) if height else None


def _overlap(one: Span, other: Span) -> bool:
    return one[0] == other[0] and bool(one[1] & other[1]) and one[2] < other[3] and other[2] < one[3]


def _where(device: Json, racks: Mapping[int, str]) -> str:
    """A device's place in words (``L01 U2 front``; ``unracked``)."""
    rack = device.get("rack")
    if not rack:
        return "unracked"
    name = racks.get(int(_value(rack))) or (rack.get("name") if isinstance(rack, dict) else "") or f"#{_value(rack)}"
    position = device.get("position")
    if position in (None, ""):
        return f"{name}, no U"
    return f"{name} U{float(position):g} {_value(device.get('face'))}"


def _host(address: object) -> str:
    return str(IPNetwork(str(address)).ip)


def _key_text(key: Any) -> str:
    return ":".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _device(row: dict[str, object]) -> str:
    """The device name of an 08/15 row (its column holds ``<site>/<name>``)."""
    return str(row[DEVICE_COLUMN]).split("/", 1)[1]


def template_difference(wanted: dict[str, tuple[str, str, bool]], held: dict[str, tuple[str, str, bool]]) -> str:
    """How a device type's templates in NetBox (name -> label, type, mgmt_only) differ from fabricgen's, in words
    ("" when they agree): the ports missing, the ports fabricgen does not make, the first ports that differ."""
    def some(items: list[str]) -> str:
        return f"{', '.join(items[:4])}{' ...' if len(items) > 4 else ''}"

    parts = []
    if missing := [n for n in wanted if n not in held]:
        parts.append(f"no template for {some(missing)}")
    if extra := [n for n in held if n not in wanted]:
        parts.append(f"templates fabricgen does not make: {some(extra)}")
    changed = [f"{n} is {'/'.join(map(str, held[n]))}, not {'/'.join(map(str, w))}" for n, w in wanted.items()
               if n in held and held[n] != w]
    if changed:
        parts.append(f"label/type/mgmt_only: {some(changed)}")
    return f"{'; '.join(parts)}; it has {len(held)}" if parts else ""


def split_cages(templates: list[Json], device: str, cabled: Mapping[str, Mapping[str, str]]) -> dict[str, Json]:
    """What a device's templated ports should be (type, mgmt_only, label, enabled, description): a cabled port
    labelled with its faceplate name on the device (``Ethernet136`` is ``17`` on the type, ``17/1`` once split);
    a cage split into sub-ports of other names (NVUE's ``swp17`` into ``swp17s0``, ``swp17s1``) disabled, with
    the sub-ports in its description (review D2: it would look free for cabling, and the NOS has no such port).
    ``cabled``: each device's cabled ports by name, their faceplate labels (grouped by device once: a scan of every
    cable end per device was quadratic in the cluster)."""
    labels = {port: label for port, label in cabled.get(device, {}).items() if label}
    subs: dict[str, list[str]] = {}
    for port, label in sorted(labels.items()):
        if "/" in label:
            subs.setdefault(label.split("/", 1)[0], []).append(port)
    want = {}
    for t in templates:
        name, label = str(t["name"]), str(t.get("label", ""))
        fields: Json = {"type": t["type"], "mgmt_only": t["mgmt_only"], "label": labels.get(name, label),
                        "enabled": True, "description": ""}
        split = subs.get(label, []) if name not in labels else []
        if split:
            fields |= {"enabled": False, "description": clamp(f"split into {len(split)}: {', '.join(split)}")}
        want[name] = fields
    return want


def port_speeds(topology: Topology) -> dict[tuple[str, str], int]:
    """(device, port) -> the speed NetBox records (kbit/s) of every cabled port: its link's."""
    speeds = catalog.speeds()
    return {(end.device, end.port): int(speeds[c.speed].gbps * 1_000_000)
            for c in topology.cables if c.speed in speeds for end in (c.a, c.z)}


def sync(topology: Topology, url: str, token: str, dry_run: bool) -> Report:
    """Make NetBox hold the cluster (or, dry run, only count what that takes); what was done, per object type."""
    report = Report(dry_run=dry_run)
    start = time.monotonic()
    netbox = NetBox(url, token, dry_run, report)
    netbox.require_release()
    Sync(topology, netbox, report).run()
    report.seconds = time.monotonic() - start
    return report


