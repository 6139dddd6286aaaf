"""The parts of `fabricgen netbox sync` that need no NetBox: how cables are grouped into NetBox cables (and their
profiles, against NetBox's own choice set), the port speeds, the token and the field comparison that makes a second
sync write nothing. The sync itself runs against a real NetBox in tests/external/netbox/test_sync.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynetbox
import pytest
import requests
import yaml

from fabricgen.core.renames import by_place_then_name, renames
from fabricgen.features.netbox.render import connectors, netbox_cables, request_costs
from fabricgen.features.netbox.sync import (
    Changes,
    NetBox,
    Report,
    Sync,
    SyncError,
    _differs,
    _place,
    port_speeds,
    release_problem,
    split_cages,
    token_value,
)
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

RELEASES = {path.stem: yaml.safe_load(path.read_text())
            for path in sorted((Path(__file__).parents[3] / "data" / "netbox").glob("netbox-*.yaml"))}


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_every_link_is_in_one_netbox_cable_and_splitters_are_one(spec: str) -> None:
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    cables = netbox_cables(topology.cables)
    labels = [c.label for c in cables]
    assert len(labels) == len(set(labels))
    assert Counter(link.id for c in cables for link in c.links) == Counter(c.id for c in topology.cables)
    partial = 0
    for cable in cables:
        links = cable.links
        if not cable.profile:
            assert len(links) == 1 and cable.label == links[0].name
            continue
        assert cable.profile in RELEASES["netbox-4.7.3"]["choices"]["CableProfileChoices"]
        # review D1: the part's profile (its legs or lanes) however many links it carries; its used legs in order
        whole = connectors(links[0])
        assert cable.profile == f"trunk-{whole}c1p" and cable.label == links[0].physical
        legs = [c.leg for c in links]
        assert legs == sorted(set(legs)) and legs[0] >= 1 and legs[-1] <= whole  # connector k is the k-th leg used
        assert (f"{len(links)} of {whole} " in cable.description) == (len(links) < whole)
        assert len({c.medium.name for c in links}) == 1
        partial += len(links) < whole
    assert partial == {"lab-1su": 0, "h100-4su": 10}[spec]  # 2 of 4 legs of 10 OOB harnesses


def test_lab_splitters_become_one_cable_each() -> None:
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    profiles = Counter(c.profile for c in netbox_cables(topology.cables))
    # 40 storage links on 20 twin-lane DACs, 8 OOB uplinks on two 4-leg breakouts, the rest one link a cable
    assert profiles == Counter({"": 144, "trunk-2c1p": 20, "trunk-4c1p": 2})


def test_port_speeds_are_the_links_in_kbit() -> None:
    speeds = port_speeds(compile_spec(INVENTORIES / "lab-1su.yaml").topology)
    assert set(speeds.values()) == {400_000_000, 200_000_000, 100_000_000, 1_000_000}
    assert max(speeds.values()) < 2**31  # NetBox's interface speed field is a 32-bit integer


def test_token_is_taken_bare_or_as_a_header_value() -> None:
    assert token_value("nbt_abc.def\n") == "nbt_abc.def"
    assert token_value("Bearer nbt_abc.def") == "nbt_abc.def"
    assert token_value("Token 0123456789abcdef") == "0123456789abcdef"
    for bad in ("", "  \n", "two\nlines"):
        with pytest.raises(SyncError):
            token_value(bad)


def test_a_field_differs_only_when_netbox_would_change() -> None:
    assert not _differs("planned", {"value": "planned", "label": "Planned"})
    assert _differs("active", {"value": "planned", "label": "Planned"})
    assert not _differs(7, {"id": 7, "url": "...", "display": "L01"})
    assert not _differs(10, 10.0) and not _differs(2.5, 2.5) and _differs(2.5, 3.0)
    assert not _differs(None, None) and not _differs(None, "") and _differs(None, 1)
    assert not _differs(False, False) and _differs(True, False)
    assert not _differs({"fabricgen_device": "lab/a"}, {"fabricgen_device": "lab/a", "other": 1})
    ends = [{"object_type": "dcim.interface", "object_id": 1}, {"object_type": "dcim.interface", "object_id": 2}]
    assert not _differs(ends, [dict(e, object={}) for e in ends])
    assert _differs(ends, list(reversed(ends)))  # connector order is the leg order


class _Endpoint:
    """A NetBox endpoint in memory whose bulk writes of more than ``fits`` objects overrun (the worker killed, or a
    proxy's 504); with ``commits``, an overrunning write is committed before the answer is lost, as a 504 from nginx
    in front of a NetBox that finished may be."""

    def __init__(self, fits: int, commits: bool, how: str = "connection") -> None:
        self.fits, self.commits, self.how = fits, commits, how
        self.objects: dict[int, dict[str, Any]] = {}
        self.sizes: list[tuple[str, int]] = []

    def _overrun(self, action: str, n: int) -> bool:
        self.sizes.append((action, n))
        return n > self.fits

    def _fail(self) -> None:
        if self.how == "connection":
            raise requests.ConnectionError("Remote end closed connection without response")
        answer = requests.Response()
        answer.status_code = int(self.how)
        answer.reason, answer._content = "Time-out", b"<html><head><title>Internal Server Error</title></head></html>"
        answer.headers["Content-Type"] = "text/html"
        answer.request = requests.Request("POST", "http://netbox.invalid/api/dcim/cables/").prepare()
        raise pynetbox.RequestError(answer)

    def create(self, payloads: list[dict[str, Any]]) -> list[SimpleNamespace]:
        overrun = self._overrun("create", len(payloads))
        if overrun and not self.commits:
            self._fail()
        made = []
        for p in payloads:
            made.append(max(self.objects, default=0) + 1)
            self.objects[made[-1]] = {"id": made[-1], **p}
        if overrun:
            self._fail()
        return [SimpleNamespace(id=i) for i in made]

    def update(self, updates: list[dict[str, Any]]) -> None:
        if self._overrun("update", len(updates)):
            self._fail()
        for u in updates:
            self.objects[u["id"]].update(u)

    def delete(self, ids: list[int]) -> None:
        overrun = self._overrun("delete", len(ids))
        if overrun and not self.commits:
            self._fail()
        for i in ids:
            del self.objects[i]
        if overrun:
            self._fail()

    def filter(self, **query: Any) -> list[dict[str, Any]]:
        if "id" in query:
            return [self.objects[i] for i in query["id"] if i in self.objects]
        assert query["ordering"] == "-id" and query["offset"] == 0
        return [self.objects[i] for i in sorted(self.objects, reverse=True)[:query["limit"]]]


def _netbox(endpoint: _Endpoint) -> NetBox:
    netbox = NetBox("http://netbox.invalid", "token", False, Report())
    netbox._endpoint = lambda path: endpoint  # type: ignore[method-assign]
    return netbox


@pytest.mark.parametrize(("commits", "how"), [(False, "connection"), (True, "connection"), (True, "504"),
                                              (False, "500")])
def test_an_overrunning_batch_is_read_back_and_sent_again_in_halves(commits: bool, how: str) -> None:
    """B5 of the NetBox review: a batch NetBox does not answer in time is halved; what it committed anyway is found
    by reading back (never created twice), and every object ends up made once, with its id."""
    endpoint = _Endpoint(fits=3, commits=commits, how=how)
    want = [(f"c{i}", {"label": f"c{i}", "length": float(i)}) for i in range(10)]
    netbox = _netbox(endpoint)
    made = netbox.write("dcim.cables", Changes(create=want), seconds=lambda _: 1.0)
    assert sum(netbox.report.overruns.values()) == (1 if commits else 3)
    assert sorted(o["label"] for o in endpoint.objects.values()) == sorted(k for k, _ in want)
    assert {k: endpoint.objects[i]["label"] for k, i in made.items()} == {k: k for k, _ in want}
    # committed before the answer was lost: read back, not sent again; else halved down to what fits
    assert [n for _, n in endpoint.sizes] == ([10] if commits else [10, 5, 3, 2, 5, 3, 2])

    gone = sorted(endpoint.objects)[:8]
    endpoint.sizes.clear()
    _netbox(endpoint).write("dcim.cables", Changes(delete=gone), seconds=lambda _: 1.0)
    assert sorted(endpoint.objects) == sorted(set(made.values()) - set(gone))
    assert [n for _, n in endpoint.sizes] == ([8] if commits else [8, 4, 2, 2, 4, 2, 2])


def test_netboxs_own_errors_are_refusals_not_overruns() -> None:
    """A 500 in NetBox's JSON (an exception in NetBox) or a 400 is NetBox's answer: stop, do not retry."""
    endpoint = _Endpoint(fits=0, commits=False, how="500")
    original = endpoint._fail

    def json_500() -> None:
        try:
            original()
        except pynetbox.RequestError as exc:
            exc.req.headers["Content-Type"] = "application/json"
            raise

    endpoint._fail = json_500  # type: ignore[method-assign]
    with pytest.raises(SyncError, match="NetBox refused"):
        _netbox(endpoint).write("dcim.cables", Changes(create=[("a", {"label": "a"}), ("b", {"label": "b"})]))
    assert [n for _, n in endpoint.sizes] == [2]


def test_one_object_that_overruns_stops_the_sync_with_the_setting_to_raise() -> None:
    endpoint = _Endpoint(fits=0, commits=False)
    with pytest.raises(SyncError, match="gunicorn's timeout") as error:
        _netbox(endpoint).write("dcim.cables", Changes(create=[("a", {"label": "a"}), ("b", {"label": "b"})]))
    assert error.value.partial and [n for _, n in endpoint.sizes] == [2, 1]


def test_batches_follow_the_cost_of_their_objects() -> None:
    """Cables (0.8 s each, request_costs.yaml) go in far smaller batches than interfaces; nothing overruns."""
    costs = request_costs()
    for path, kind in (("dcim.cables", "cables"), ("dcim.interfaces", "interfaces"),
                       ("ipam.ip_addresses", "ip-addresses")):
        endpoint = _Endpoint(fits=10_000, commits=False)
        _netbox(endpoint).write(path, Changes(create=[(i, {"n": i}) for i in range(1000)]))
        per_request = int(costs.budget_s / costs.of(kind))
        assert [n for _, n in endpoint.sizes] == [per_request] * (1000 // per_request) + (
            [1000 % per_request] if 1000 % per_request else [])


def _bare_sync(netbox: Any) -> Sync:
    sync = Sync.__new__(Sync)
    sync.nb, sync.report, sync.tag, sync.deferred = netbox, netbox.report, 1, []
    return sync


class _Recorder:
    """Sync's NetBox side for one step: reads answer ``held``, writes are recorded."""

    def __init__(self, held: list[dict[str, Any]] | None = None) -> None:
        self.report = Report()
        self.held = held or []
        self.writes: list[tuple[str, Changes]] = []
        self.dry_run = False

    def read(self, path: str, fields: str, **filters: Any) -> list[dict[str, Any]]:
        return self.held

    def write(self, path: str, changes: Changes, seconds: Any = None) -> dict[Any, int]:
        self.writes.append((path, changes))
        return {key: 100 + n for n, (key, _) in enumerate(changes.create)}


def test_status_is_sent_on_create_and_never_put_back() -> None:
    """B4 of the NetBox review: a crew moves a cable to connected, a device to active; a sync leaves that alone."""
    netbox = _Recorder()
    sync = _bare_sync(netbox)
    held = {"a": {"id": 7, "status": {"value": "connected", "label": "Connected"}, "length": 2.0, "tags": [{"id": 1}]}}
    want = {"a": {"status": "planned", "length": 2.0}, "b": {"status": "planned", "length": 3.0}}
    sync.reconcile("cables", "dcim.cables", want, held)
    (_, changes), = netbox.writes
    assert changes.update == [] and changes.create == [("b", {"status": "planned", "length": 3.0, "tags": [1]})]
    sync.reconcile("cables", "dcim.cables", {"a": {"status": "planned", "length": 2.5}}, held)
    assert netbox.writes[-1][1].update == [{"id": 7, "length": 2.5}]


def _template(n: int, name: str, kind: str = "infiniband-ndr", label: str = "", mgmt: bool = False) -> dict[str, Any]:
    """An interface template as NetBox's API renders it (a choice as value and label)."""
    return {"id": n, "device_type": {"id": 5}, "name": name, "label": label,
            "type": {"value": kind, "label": kind.upper()}, "mgmt_only": mgmt}


def test_an_existing_device_type_without_fabricgens_ports_is_a_conflict() -> None:
    """B6 of the NetBox review: the device-type library's QM9700 names its ports P0.0..P31.1; sync stops rather
    than add fabricgen's 1/1..32/2 beside them."""
    library = [_template(n, f"P{n // 2}.{n % 2}") for n in range(64)]
    ours = [{"name": f"{c}/{lane}", "type": "infiniband-ndr", "mgmt_only": False} for c in range(1, 33)
            for lane in (1, 2)]
    types = {("nvidia", "QM9700"): {"model": "QM9700", "interfaces": ours}}
    with pytest.raises(SyncError, match=r"Nvidia QM9700|nvidia QM9700") as error:
        _bare_sync(_Recorder(library))._templates_cover(types, {("nvidia", "QM9700"): {"id": 5}})
    assert "1/1, 1/2, 2/1, 2/2 ..." in str(error.value) and "it has 64" in str(error.value)
    covering = [_template(n, p["name"]) for n, p in enumerate(ours)]
    _bare_sync(_Recorder(covering))._templates_cover(types, {("nvidia", "QM9700"): {"id": 5}})


def test_any_difference_in_an_existing_types_templates_is_a_conflict() -> None:
    """B7 of the NetBox review: a node type another cluster made with other NICs (a port typed otherwise, a port
    more, another label) stops the sync, naming the difference, instead of leaving both clusters' ports mixed."""
    ours = [{"name": "ib0", "label": "NIC0", "type": "400gbase-x-osfp", "mgmt_only": False},
            {"name": "BMC", "type": "1000base-t", "mgmt_only": True}]
    types = {("generic", "hgx"): {"model": "hgx", "interfaces": ours}}
    same = [_template(1, "ib0", "400gbase-x-osfp", "NIC0"), _template(2, "BMC", "1000base-t", mgmt=True)]
    _bare_sync(_Recorder(same))._templates_cover(types, {("generic", "hgx"): {"id": 5}})
    for held, words in (
            ([_template(1, "ib0", "infiniband-ndr", "NIC0"), same[1]], "ib0 is NIC0/infiniband-ndr/False, not "
                                                                        "NIC0/400gbase-x-osfp/False"),
            ([*same, _template(3, "ib1", "400gbase-x-osfp", "NIC1")], "templates fabricgen does not make: ib1"),
            ([_template(1, "ib0", "400gbase-x-osfp", "OSFP1"), same[1]], "ib0 is OSFP1/")):
        with pytest.raises(SyncError, match="generic hgx") as error:
            _bare_sync(_Recorder(held))._templates_cover(types, {("generic", "hgx"): {"id": 5}})
        assert words in str(error.value), error.value


def test_a_cage_split_into_other_names_is_disabled() -> None:
    """D1/D2: a templated port takes its faceplate label on the device as cabled (SONiC's Ethernet136 is cage 17,
    then 17/1); NVUE's swp17 split into swp17s0/swp17s1 is no port of the NOS: disabled, naming its sub-ports."""
    templates = [{"name": "Ethernet136", "label": "17", "type": "400gbase-x-qsfpdd", "mgmt_only": False},
                 {"name": "swp17", "label": "17", "type": "400gbase-x-qsfpdd", "mgmt_only": False},
                 {"name": "swp18", "label": "18", "type": "400gbase-x-qsfpdd", "mgmt_only": False}]
    sonic = split_cages(templates[:1], "leaf", {"leaf": {"Ethernet136": "17/1", "Ethernet140": "17/2"}})
    assert sonic["Ethernet136"] == {"type": "400gbase-x-qsfpdd", "mgmt_only": False, "label": "17/1",
                                    "enabled": True, "description": ""}
    nvue = split_cages(templates[1:], "leaf", {"leaf": {"swp17s0": "17/1", "swp17s1": "17/2"},
                                               "other": {"swp18s0": "18/1"}})
    assert nvue["swp17"]["enabled"] is False and nvue["swp17"]["description"] == "split into 2: swp17s0, swp17s1"
    assert nvue["swp18"]["enabled"] is True and nvue["swp18"]["label"] == "18"


def test_the_site_is_linked_to_its_asns_adding_never_removing() -> None:
    """D7: the cluster's ASNs are added to its site's ``asns`` (a hand-linked one stays); a site fabricgen does not
    own is left as it is; nothing is sent when the site holds them all."""
    netbox = _Recorder()
    sync = _bare_sync(netbox)
    sync.site = 9
    sync.site_have = {"id": 9, "asns": [{"id": 3, "asn": 64999}], "tags": [{"id": 1}]}
    sync._site_asns([1, 2])
    (path, changes), = netbox.writes
    assert path == "dcim.sites" and changes.update == [{"id": 9, "asns": [1, 2, 3]}]
    sync.site_have = {"id": 9, "asns": [{"id": 1}, {"id": 2}], "tags": [{"id": 1}]}
    sync._site_asns([1, 2])
    sync.site_have = {"id": 9, "asns": [], "tags": []}
    sync._site_asns([1, 2])
    assert len(netbox.writes) == 1


def test_a_netbox_older_than_4_5_is_refused() -> None:
    """Review D6: NetBox < 4.5 has no cable profile (a trunk's links would trace to every far lane, and every sync
    would write the profile again); its API-Version header says major.minor."""
    assert release_problem("4.5") == release_problem("4.7") == release_problem("5.0") == ""
    for version in ("4.4", "3.7", "4"):
        problem = release_problem(version)
        assert "needs 4.5 or newer" in problem and "hint:" in problem, version
    assert "is version 4.4" in release_problem("4.4")
    assert "gives no API version" in release_problem("")
    assert "cannot read ('x.y')" in release_problem("x.y")


def test_a_harness_with_1_or_3_legs_used_is_one_cable(tmp_path: Path) -> None:
    """Review D1's reproduction: h100-4su with row A at 11 racks leaves OOB harnesses with 3 legs used (the new
    rack's switch) and 1 (row D's): each is still one trunk-4c1p NetBox cable labelled with its physical id, saying
    how many legs it uses, where the profile by links used made one cable per leg."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count("- {name: A, racks: 10}") == 1
    spec = tmp_path / "h100-4su-11.yaml"
    spec.write_text(text.replace("- {name: A, racks: 10}", "- {name: A, racks: 11}"))
    topology = compile_spec(spec).topology
    cables = netbox_cables(topology.cables)
    assert not [c.label for c in cables if not c.profile and c.links[0].leg], "a harness split into a cable per leg"
    used = Counter(len(c.links) for c in cables if c.profile == "trunk-4c1p" and len(c.links) < 4)
    assert used[3] and used[1], used
    for cable in cables:
        if cable.profile == "trunk-4c1p" and len(cable.links) in (1, 3):
            assert cable.label == cable.links[0].physical and "/" not in cable.label
            assert f", {len(cable.links)} of 4 legs used (" in cable.description, cable.description


def test_a_rename_is_taken_only_where_one_old_and_one_new_stand() -> None:
    """B1 of the UX review: a planned device NetBox lacks by name, where exactly one of fabricgen's devices the
    plan no longer names stands (rack, U, face, type), is that device renamed; two either side: no guess."""
    here, there = (3, 48.0, "front", 9), (4, 48.0, "front", 9)
    assert renames({"oob-k01": here, "oob-k02": there, "hgx09": None}, {"oob-l01": here, "oob-l02": there}) == {
        "oob-k01": "oob-l01", "oob-k02": "oob-l02"}
    assert renames({"a": here, "b": here}, {"oob-l01": here}) == {}
    assert renames({"a": here}, {"oob-l01": here, "oob-l02": here}) == {}
    assert renames({"a": None}, {"b": None}) == {}
    held = {"rack": {"id": 3, "name": "L01"}, "position": 48.0, "face": {"value": "front", "label": "Front"},
            "device_type": {"id": 9}}
    assert _place(held) == here == _place({"rack": 3, "position": 48, "face": "front", "device_type": 9})
    assert _place({"rack": None, "position": None, "face": None, "device_type": 9}) is None


def test_a_rack_is_told_by_the_devices_that_keep_their_names_in_it() -> None:
    """Sync's occupants of a rack (core/renames.py's rule): each planned rack's devices NetBox holds by name, each
    held rack's (by id) devices the plan names; a device new to NetBox, or one the plan drops, tells no rack."""
    records = [{"name": "hgx01", "rack": "K01"}, {"name": "oob-k01", "rack": "K01"}, {"name": "hgx03", "rack": "K02"},
               {"name": "spare", "rack": ""}]
    held = {"hgx01": {"rack": {"id": 7}}, "oob-l01": {"rack": {"id": 7}}, "hgx03": {"rack": 8}, "old": {"rack": 9},
            "spare": {"rack": None}}
    sync = SimpleNamespace(imports=SimpleNamespace(records=lambda name: records), devices_have=held)
    planned, have = Sync._occupants(sync, "rack", "rack")  # type: ignore[arg-type]
    assert planned == {"K01": frozenset({"hgx01"}), "K02": frozenset({"hgx03"})}
    assert have == {7: frozenset({"hgx01"}), 8: frozenset({"hgx03"})}


HEIGHTS = {9: (8.0, True), 8: (1.0, True)}  # device type id -> U height, full depth (hgx, switch)


class _DeviceStore:
    """NetBox's devices of one site in memory, refusing what NetBox refuses, one object of a bulk PATCH at a time
    (dcim/models/devices.py of 4.7.3): a name twice in the site (ignoring case), a unique ``fabricgen_device`` twice,
    a device onto units another holds (``U is already occupied``)."""

    def __init__(self, devices: list[dict[str, Any]]) -> None:
        self.objects = {int(d["id"]): d for d in devices}
        self.report = Report()
        self.dry_run = False
        self.writes: list[tuple[str, list[dict[str, Any]]]] = []

    def read(self, path: str, fields: str, **filters: Any) -> list[dict[str, Any]]:
        if path == "dcim.device_types":
            return [{"id": i, "u_height": h, "is_full_depth": f} for i, (h, f) in HEIGHTS.items() if i in filters["id"]]
        return [dict(o) for o in self.objects.values()]

    def _check(self, device: dict[str, Any]) -> None:
        from fabricgen.features.netbox.sync import _overlap, _span
        for other in self.objects.values():
            if other["id"] == device.get("id"):
                continue
            if str(other["name"]).lower() == str(device["name"]).lower():
                raise SyncError(f"NetBox refused: Device name must be unique per site and tenant ({device['name']})")
            mine = (device.get("custom_fields") or {}).get("fabricgen_device")
            if mine is not None and mine == (other.get("custom_fields") or {}).get("fabricgen_device"):
                raise SyncError(f"NetBox refused: Custom field 'fabricgen_device' must have a unique value ({mine})")
            one, two = _span(device, HEIGHTS), _span(other, HEIGHTS)
            if one and two and _overlap(one, two):
                raise SyncError(f"NetBox refused: U{device['position']} is already occupied ({device['name']})")

    def write(self, path: str, changes: Changes, seconds: Any = None) -> dict[Any, int]:
        assert path == "dcim.devices"
        self.writes.append(("update", changes.update))
        for update in changes.update:
            device = {**self.objects[update["id"]], **update}
            self._check(device)
            self.objects[update["id"]] = device
        made = {}
        for key, payload in changes.create:
            device = {"id": 100 + len(self.objects), **payload}
            self._check(device)
            self.objects[device["id"]] = made[key] = device
        for gone in changes.delete:
            del self.objects[gone]
        return {key: int(d["id"]) for key, d in made.items()}


def _held(n: int, name: str, u: float, kind: int = 9, tagged: bool = True) -> dict[str, Any]:
    """A device as NetBox's API renders it, in rack R1 (id 3)."""
    return {"id": n, "name": name, "rack": {"id": 3, "name": "R1"}, "position": u,
            "face": {"value": "front", "label": "Front"}, "device_type": {"id": kind}, "serial": f"SN{n}",
            "custom_fields": {"fabricgen_device": f"lab/{name}" if tagged else None},
            "tags": [{"id": 1}] if tagged else []}


def _sync_devices(store: _DeviceStore, planned: list[tuple[str, int, str]]) -> Sync:
    """Sync's device step (and its deferred deletions) over ``store``, the plan (name, U, type) in rack R1."""
    rows = [{"name": name, "role": "server", "device_type": kind, "status": "planned", "location": "", "rack": "R1",
             "position": str(u), "face": "front", "cf_fabricgen_device": f"lab/{name}"} for name, u, kind in planned]
    sync = _bare_sync(store)
    sync.site, sync.type_ports = 1, {}
    sync.imports = SimpleNamespace(records=lambda name: rows, device_types=[
        {"model": "hgx", "u_height": 8, "is_full_depth": True}, {"model": "sw", "u_height": 1}])  # type: ignore[assignment]
    sync.ids = {"roles": {"server": 1}, "device types": {"hgx": 9, "sw": 8}, "locations": {}, "racks": {"R1": 3}}
    sync.devices_have = {o["name"]: o for o in store.read("dcim.devices", "")}
    sync._devices()
    for path, changes, seconds in reversed(sync.deferred):
        store.write(path, changes, seconds)
    return sync


def _at(store: _DeviceStore) -> dict[float, tuple[str, str]]:
    """U -> (name, serial) of every racked device: which record stands where."""
    return {float(o["position"]): (o["name"], o.get("serial", "")) for o in store.objects.values()
            if o["position"]}


def test_a_node_groups_start_moved_renames_the_boxes_where_they_stand() -> None:
    """Field review break 1: hgx01..hgx04 renumbered hgx02..hgx05 at the same places (a group's start moved) are
    the same records renamed where they stand (serials stay with the box); each name another record held is freed
    first, so NetBox takes the chain (by name first, hgx02's record was PATCHed onto hgx01's U and refused)."""
    store = _DeviceStore([_held(n, f"hgx0{n}", 2 + 8 * (n - 1)) for n in range(1, 5)])
    before = _at(store)
    sync = _sync_devices(store, [(f"hgx0{n + 1}", 2 + 8 * (n - 1), "hgx") for n in range(1, 5)])
    assert _at(store) == {u: (f"hgx0{int(name[-1]) + 1}", serial) for u, (name, serial) in before.items()}
    assert sorted(store.objects) == [1, 2, 3, 4]  # nothing made, nothing deleted
    assert sync.report.renamed == [f"device hgx0{n} -> hgx0{n + 1}" for n in range(1, 5)] and not sync.report.moved
    freed, final = store.writes[0][1], store.writes[1][1]
    assert sorted(u["name"] for u in freed) == ["fabricgen~2", "fabricgen~3", "fabricgen~4"]  # hgx01's name is free
    assert all(u["custom_fields"] == {"fabricgen_device": None} for u in freed)
    assert {u["id"]: u["name"] for u in final} == {n: f"hgx0{n + 1}" for n in range(1, 5)}
    store.report, store.writes = Report(), []
    again = _sync_devices(store, [(f"hgx0{n + 1}", 2 + 8 * (n - 1), "hgx") for n in range(1, 5)]).report
    assert again.changes == 0 and not again.renamed and all(not updates for _, updates in store.writes)


def test_two_nodes_names_swapped_swap_through_temporary_names() -> None:
    store = _DeviceStore([_held(1, "hgx01", 2), _held(2, "hgx02", 10)])
    sync = _sync_devices(store, [("hgx02", 2, "hgx"), ("hgx01", 10, "hgx")])
    assert _at(store) == {2.0: ("hgx02", "SN1"), 10.0: ("hgx01", "SN2")}
    assert sync.report.renamed == ["device hgx01 -> hgx02", "device hgx02 -> hgx01"]
    assert [len(updates) for _, updates in store.writes if updates] == [2, 2]  # freed, then set


def test_moves_into_units_others_leave_clear_their_positions_first() -> None:
    """start_u 2 -> 3: each node moves up a U into the units of the one above it (no record stands at any new
    place, so they move by name); the ones in the way are cleared first, then every node is set. A record to be
    deleted where a new device goes (another type at that U) is cleared first too: deletions come last."""
    store = _DeviceStore([*(_held(n, f"hgx0{n}", 2 + 8 * (n - 1)) for n in range(1, 4)), _held(7, "sw9", 40, kind=8)])
    sync = _sync_devices(store, [*((f"hgx0{n}", 3 + 8 * (n - 1), "hgx") for n in range(1, 4)), ("hgx04", 40, "hgx")])
    assert _at(store) == {3.0: ("hgx01", "SN1"), 11.0: ("hgx02", "SN2"), 19.0: ("hgx03", "SN3"),
                          40.0: ("hgx04", "")}  # a new record
    assert 7 not in store.objects  # sw9 deleted, after it was cleared
    assert sorted(u["id"] for u in store.writes[0][1]) == [2, 3, 7] and all(
        u == {"id": u["id"], "position": None} for u in store.writes[0][1])
    assert sync.report.moved == [f"device hgx0{n}: R1 U{2 + 8 * (n - 1)} front -> R1 U{3 + 8 * (n - 1)} front"
                                 for n in range(1, 4)]


def test_a_unit_held_by_a_device_fabricgen_did_not_make_stops_before_any_device_is_written() -> None:
    store = _DeviceStore([_held(1, "hgx01", 2), _held(2, "hgx02", 10), _held(5, "pdu-a", 18, kind=8, tagged=False)])
    with pytest.raises(SyncError, match=r"1 devices cannot be moved or made .*hgx02 to R1 U11 front: pdu-a stands"):
        _sync_devices(store, [("hgx01", 2, "hgx"), ("hgx02", 11, "hgx")])
    assert store.writes == []
    # a name another's device bears: the same stop (fabricgen renames none of its own onto it)
    with pytest.raises(SyncError, match=r"1 devices at fabricgen's keys .*: PDU-A"):
        _sync_devices(_DeviceStore([_held(1, "hgx01", 2), _held(5, "PDU-A", 18, kind=8, tagged=False)]),
                      [("pdu-a", 2, "hgx")])


def test_place_comes_before_name_then_name_for_the_rest() -> None:
    here, there = (3, 2.0, "front", 9), (3, 10.0, "front", 9)
    # the record at a planned place is that device, even when its own name is planned elsewhere
    assert by_place_then_name({"b": here, "a": (3, 30.0, "front", 9)}, {"a": here}) == {"b": "a"}
    assert by_place_then_name({"a": (3, 30.0, "front", 9)}, {"a": here}) == {"a": "a"}  # no place: by name
    assert by_place_then_name({"a": there, "b": here}, {"a": here, "b": there}) == {"a": "b", "b": "a"}
    assert by_place_then_name({"a": None}, {"a": None}) == {"a": "a"}


def test_an_address_moving_to_another_device_is_released_as_its_primary_first() -> None:
    """Nodes that move by name take the addresses of their new order; NetBox refuses to reassign an address a
    device holds as its primary or OOB one, so those marks are cleared first (and set again by _primary)."""
    netbox = _Recorder()
    sync = _bare_sync(netbox)
    node = {"id": 21, "name": "hgx01", "primary_ip4": {"id": 342}, "oob_ip": {"id": 343}, "tags": [{"id": 1}]}
    sync.devices_held, sync.devices_have = {"hgx01": node}, {"hgx01": dict(node)}
    have = {"10.40.0.1": {"id": 342, "assigned_object_id": 5, "tags": [{"id": 1}]},
            "10.44.0.1": {"id": 343, "assigned_object_id": 6, "tags": [{"id": 1}]}}
    sync._release_marks({"10.40.0.1": {"assigned_object_id": 9}, "10.44.0.1": {"assigned_object_id": 6}}, have)
    (path, changes), = netbox.writes
    assert path == "dcim.devices" and changes.update == [{"id": 21, "primary_ip4": None}]
    assert sync.devices_have["hgx01"]["primary_ip4"] is None and sync.devices_have["hgx01"]["oob_ip"] == {"id": 343}
    netbox.writes.clear()
    sync._release_marks({"10.44.0.1": {"assigned_object_id": 6}}, have)  # nothing moves: nothing written
    assert netbox.writes == []
