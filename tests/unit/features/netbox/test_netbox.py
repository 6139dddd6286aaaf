"""The NetBox import set against NetBox's own source: every choice value is in the release's choice set, every column
a field of its import form, every reference made by an earlier file, no interface both templated and imported.

NetBox itself is not run here (see the README's "NetBox import" section): tests/data/netbox/ holds the choice sets
and import-form fields read by tests/data/netbox/extract.py from NetBox's source, the v4.6.8 tag on GitHub and the
4.7.3 wheel on PyPI; every check runs against both.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.features.netbox import render as netbox
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.spec import catalog
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES
from tests.helpers.netbox import cable_ends

RELEASES = {path.stem: yaml.safe_load(path.read_text())
            for path in sorted((Path(__file__).parents[3] / "data" / "netbox").glob("netbox-*.yaml"))}
SPECS = ("lab-1su", "h100-4su")
# file -> (import form, {column: choice set})
FILES: dict[str, tuple[str, dict[str, str]]] = {
    "00-tags": ("TagImportForm", {}),
    "00-custom-fields": ("CustomFieldImportForm", {}),
    "01-sites": ("SiteImportForm", {"status": "SiteStatusChoices"}),
    "02-locations": ("LocationImportForm", {"status": "LocationStatusChoices"}),
    "03-manufacturers": ("ManufacturerImportForm", {}),
    "04-device-roles": ("DeviceRoleImportForm", {}),
    "06-racks": ("RackImportForm", {"status": "RackStatusChoices", "width": "RackWidthChoices"}),
    "07-devices": ("DeviceImportForm", {"status": "DeviceStatusChoices", "face": "DeviceFaceChoices"}),
    "08-interfaces": ("InterfaceImportForm", {"type": "InterfaceTypeChoices"}),
    "09-cables": ("CableImportForm", {"type": "CableTypeChoices", "profile": "CableProfileChoices",
                                      "status": "LinkStatusChoices", "length_unit": "CableLengthUnitChoices"}),
    "10-rirs": ("RIRImportForm", {}),
    "11-asns": ("ASNImportForm", {}),
    "12-vlan-groups": ("VLANGroupImportForm", {}),
    "13-vlans": ("VLANImportForm", {"status": "VLANStatusChoices"}),
    "14-vrfs": ("VRFImportForm", {}),
    "15-prefixes": ("PrefixImportForm", {"status": "PrefixStatusChoices"}),
    "16-ip-addresses": ("IPAddressImportForm", {"status": "IPAddressStatusChoices", "role": "IPAddressRoleChoices"}),
}


def form_fields(form: str) -> set[str]:
    """A form's fields, with those of its bases found in the source (CSVModelForm adds ``id``), in every release."""
    def fields(release: dict[str, Any], name: str) -> set[str]:
        entry = release["import_forms"].get(name)
        if entry is None:
            return set()
        return set(entry["fields"]).union(*(fields(release, base) for base in entry["bases"]))

    return set.intersection(*(fields(release, form) for release in RELEASES.values()))


def choices(name: str) -> set[str]:
    """The values every release allows."""
    return set.intersection(*({str(v) for v in release["choices"][name]} for release in RELEASES.values()))


def test_both_releases_are_read() -> None:
    assert set(RELEASES) == {"netbox-v4.6.8", "netbox-4.7.3"}
    assert all(len(r["choices"]["InterfaceTypeChoices"]) > 200 for r in RELEASES.values())


@cache
def netbox_set(spec: str) -> dict[str, Any]:
    """The spec's NetBox files: each CSV (parts joined) as rows, the device types as YAML documents."""
    files: dict[str, Any] = {}
    for a in render_spec(compile_spec(INVENTORIES / f"{spec}.yaml"), ("netbox",)):
        if a.path.endswith(".yaml"):
            assert a.path.startswith("netbox/05-device-types/"), a.path
            files.setdefault("05-device-types", []).append(yaml.safe_load(a.content))  # one type per file
            continue
        name = re.sub(r"-part-[0-9a-fx]+-\d+$", "", a.path.removeprefix("netbox/").removesuffix(".csv"))
        # a dotted column names the related object by another field (NetBox's CSV import): keyed by the field
        rows = csv.DictReader(io.StringIO(a.content.decode()))
        files.setdefault(name, []).extend({k.split(".", 1)[0]: v for k, v in row.items()} for row in rows)
    return files


@pytest.mark.parametrize("spec", SPECS)
def test_every_column_is_an_import_field_and_every_value_a_choice(spec: str) -> None:
    files = netbox_set(spec)
    assert set(files) <= {*FILES, "05-device-types"}
    for name, rows in files.items():
        if name == "05-device-types":
            continue
        form, choice_columns = FILES[name]
        fields = form_fields(form)
        columns = {c for c in rows[0] if not c.startswith("cf_")}  # custom fields: 00-custom-fields makes them
        assert "id" in fields and columns <= fields, f"{name}: not fields of {form}: {columns - fields}"
        for column, choice_set in choice_columns.items():
            used = {r[column] for r in rows if r[column]}
            assert used <= choices(choice_set), f"{name}.{column}: {used - choices(choice_set)} not in {choice_set}"
    type_fields = form_fields("DeviceTypeImportForm")
    template_fields = form_fields("InterfaceTemplateImportForm")
    for doc in files["05-device-types"]:
        assert set(doc) - {"interfaces", *netbox.COMPONENTS} <= type_fields
        assert "airflow" not in doc  # review D4: the catalog's model does not say which airflow SKU
        for template in doc["interfaces"]:
            assert set(template) <= template_fields
            assert template["type"] in choices("InterfaceTypeChoices"), template
        for key, form, choice_set in (("console-ports", "ConsolePortTemplateImportForm", "ConsolePortTypeChoices"),
                                      ("power-ports", "PowerPortTemplateImportForm", "PowerPortTypeChoices")):
            for template in doc.get(key, ()):
                assert set(template) <= form_fields(form) and template["type"] in choices(choice_set), template


def test_switch_types_carry_their_dcim_facts() -> None:
    """Review D5: a switch type says what the device-type library says of its model (device_facts.yaml): SN2201 is
    half depth (it was full depth, as every type), QM9700 14.8 kg (no airflow: review D4, sold in both), a console
    port and two C14 power inlets, which NetBox makes on every device of the type; a node type, whose hardware no
    fact names, NetBox's default depth and no ports but its interfaces."""
    types = {d["model"]: d for d in netbox_set("lab-1su")["05-device-types"]}
    assert types["SN2201 SONiC"]["is_full_depth"] is False and types["SN2201 SONiC"]["weight"] == 7.41
    assert types["SN2201 SONiC"]["console-ports"] == [{"name": "con0", "type": "usb-mini-a"}]
    qm9700 = types["QM9700 faceplate"]
    assert (qm9700["is_full_depth"], qm9700["weight"], qm9700["weight_unit"]) == (True, 14.8, "kg")
    assert [p["name"] for p in qm9700["power-ports"]] == ["psu0", "psu1"] and len(qm9700["console-ports"]) == 1
    node = types["hgx-8gpu-generic"]
    assert node["is_full_depth"] is True and not set(node) & {"airflow", "weight", *netbox.COMPONENTS}
    facts = netbox.device_facts()
    assert set(facts) <= set(catalog.shipped("switches").entries), "facts of a model the catalog does not have"
    known = {"is_full_depth", "weight_kg", "console_ports", "power_ports"}
    assert all(set(f) <= known and "is_full_depth" in f for f in facts.values())


def test_catalog_netbox_values_are_netbox_choices() -> None:
    """Every slug the shipped catalog and the cage table can emit, not only those the examples use."""
    assert {m.netbox_type for m in catalog.media(None)} <= choices("CableTypeChoices")
    assert {s.netbox_interface_type for s in catalog.speeds().values()} <= choices("InterfaceTypeChoices")
    table = netbox.interface_types()
    assert {t for types in table.values() for t in types.values()} <= choices("InterfaceTypeChoices")
    forms = {g["form_factor"] for sw in catalog.shipped("switches").entries.values() for g in sw["port_groups"]}
    forms |= {n["form_factor"] for n in catalog.shipped("nics").entries.values() if n.get("form_factor")}
    assert forms <= set(table), f"cages with no NetBox type: {forms - set(table)}"
    assert all(re.fullmatch("[0-9a-f]{6}", c) for c in netbox.ROLE_COLOURS.values())


@pytest.mark.parametrize("spec", SPECS)
def test_a_physical_cable_is_one_netbox_cable(spec: str) -> None:
    """Issue 19: a cage-pair cable or a splitter is one 09 row, not a row per link: its sides' interfaces in link
    order on a trunk profile of as many connectors as links, labelled with the physical cable's id (the sheets'
    plug labels begin with it), its description naming the part and its plugs (review D3) within NetBox's 200
    characters; every link of the plan is in exactly one row."""
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    names = netbox.port_names(topology)
    rows = netbox_set(spec)["09-cables"]
    by_label = {r["label"]: r for r in rows}
    assert len(by_label) == len(rows)
    physical: dict[str, list[Any]] = {}
    for c in topology.cables:
        physical.setdefault(c.physical, []).append(c)
    assert len(rows) == len(physical) < len(topology.cables)
    speeds = catalog.speeds()
    partial: Counter[bool] = Counter()
    for cable_id, links in physical.items():
        links.sort(key=lambda c: c.leg)
        row = by_label[cable_id]
        assert cable_ends(row, "a") == [(c.a.device, names(c.a.device, c.a.port)) for c in links]
        assert cable_ends(row, "b") == [(c.z.device, names(c.z.device, c.z.port)) for c in links]
        # review D1: the part's connectors (a splitter's legs, a cage pair's lanes), not the links used
        first = links[0]
        parts = first.medium.legs if first.medium.legs > 1 else int(
            speeds[first.medium.speeds[0]].gbps // speeds[first.speed].gbps)
        assert row["profile"] == (f"trunk-{parts}c1p" if first.leg else "")
        assert float(row["length"]) == max(c.length_m for c in links)
        assert len(row["description"]) <= 200 and (not first.leg or first.part in row["description"])
        if first.leg:
            plugs = "one plug each end" if first.medium.legs == 1 else "one plug at B (the trunk), one a leg at A"
            assert plugs in row["description"], row["description"]
            unused = f"{len(links)} of {parts} {'lanes' if first.medium.legs == 1 else 'legs'} used"
            assert (unused in row["description"]) == (len(links) < parts), row["description"]
            partial[first.medium.legs == 1] += len(links) < parts
    kinds = Counter(c.medium.legs == 1 for links in physical.values() if len(links) > 1 for c in links[:1])
    assert kinds[True] and kinds[False], "both cage-pair cables and splitters"
    assert partial[False] or spec != "h100-4su", "h100-4su's harnesses with legs unused"


@pytest.mark.parametrize("spec", SPECS)
def test_every_reference_is_made_by_an_earlier_file(spec: str) -> None:
    f = netbox_set(spec)
    site = f["01-sites"][0]["name"]
    locations = {(r["site"], r["name"]) for r in f["02-locations"]}
    manufacturers = {r["name"] for r in f["03-manufacturers"]}
    roles = {r["name"] for r in f["04-device-roles"]}
    types = {(d["manufacturer"], d["model"]): d for d in f["05-device-types"]}
    assert {d["manufacturer"] for d in types.values()} <= manufacturers
    racks = {(r["location"], r["name"]) for r in f["06-racks"]}
    assert {(r["site"], r["location"]) for r in f["06-racks"]} <= locations
    templated: dict[tuple[str, str], dict[str, Any]] = {}
    for device in f["07-devices"]:
        assert device["site"] == site and device["role"] in roles
        assert (device["manufacturer"], device["device_type"]) in types
        assert not device["rack"] or (device["location"], device["rack"]) in racks
        for template in types[(device["manufacturer"], device["device_type"])]["interfaces"]:
            templated[(device["name"], template["name"])] = template
    keys = {device["cf_fabricgen_device"]: device["name"] for device in f["07-devices"]}
    assert len(keys) == len(f["07-devices"]) and all(k == f"{site}/{n}" for k, n in keys.items())
    imported = {(keys[r["device"]], r["name"]) for r in f.get("08-interfaces", [])}
    assert not imported & set(templated), "an imported interface collides with a device-type template"
    interfaces = imported | set(templated)
    ends = Counter()
    for cable in f["09-cables"]:
        for end in cable_ends(cable):
            assert end in interfaces, f"cable {cable['label']}: {end} is no device's interface"
            ends[end] += 1
    assert max(ends.values()) == 1, "an interface takes one cable"
    assert {r["rir"] for r in f.get("11-asns", [])} <= {r["name"] for r in f.get("10-rirs", [])}
    assert {r["group"] for r in f.get("13-vlans", [])} <= {r["slug"] for r in f.get("12-vlan-groups", [])}
    vrfs = {(r["name"], r["rd"]) for r in f.get("14-vrfs", [])}
    assert vrfs == {(site, netbox.vrf_rd(site))}, "one VRF per cluster, named after its site, unique by its RD"
    assert re.fullmatch(r"64512:\d{1,10}", netbox.vrf_rd(site)) and netbox.vrf_rd(site) != netbox.vrf_rd(site + "2")
    assert {r["vrf"] for r in f.get("15-prefixes", []) + f.get("16-ip-addresses", [])} == {rd for _, rd in vrfs}
    for ip in f.get("16-ip-addresses", []):
        assert (keys[ip["device"]], ip["interface"]) in interfaces, ip
        assert "/" in ip["address"], "NetBox needs a prefix length"
    for kind in ("is_primary", "is_oob"):
        marked = Counter(ip["device"] for ip in f.get("16-ip-addresses", []) if ip[kind] == "true")
        assert not marked or max(marked.values()) == 1, f"{kind}: one per device"


def test_h100_interfaces_are_typed_by_cage_and_bmc_ports_are_management() -> None:
    f = netbox_set("h100-4su")
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    templates = {(d["model"], t["name"]): t for d in f["05-device-types"] for t in d["interfaces"]}
    devices = {d["name"]: d["device_type"] for d in f["07-devices"]}
    qsfp112 = 0
    for node in topology.cluster.nodes:
        profile = node.profile
        assert templates[(devices[node.name], profile.bmc.port)]["mgmt_only"] is True
        for nic in (*profile.compute, *profile.storage, *profile.inband):
            template = templates.get((devices[node.name], nic.netdev or nic.port))
            form = topology.cluster.nic_models[nic.model].form_factor
            if template is not None and form == "QSFP112":
                assert template["type"] == "400gbase-x-qsfp112", (nic, template)
                qsfp112 += 1
    assert qsfp112, "h100-4su cables QSFP112 ports (BlueField-3)"
    # every switch's management port is a management-only template
    mgmt = [t for (model, _), t in templates.items() if t["mgmt_only"] and model not in
            {devices[n.name] for n in topology.cluster.nodes}]
    assert mgmt and all(t["type"] == "1000base-t" for t in mgmt)
    oob = {ip["device"].split("/", 1)[1] for ip in f["16-ip-addresses"] if ip["is_oob"] == "true"}
    primary = {ip["device"].split("/", 1)[1] for ip in f["16-ip-addresses"] if ip["is_primary"] == "true"}
    plans = topology.addresses.values()
    assert set().union(*(p.management for p in plans)) <= oob
    assert set().union(*(p.loopbacks for p in plans)) <= primary
    bmc = {node for ft in topology.fabrics if ft.fabric.role.value == "oob"
           for s in topology.addresses[ft.fabric.name].hosts for node, _, _ in s.hosts}
    assert bmc and bmc <= oob, "every node's BMC address is its out-of-band IP"


def test_device_types_are_the_hardware_not_the_cabling() -> None:
    """U3: a type is global in NetBox and its templates apply only when a device is made, so a switch type carries
    every cage of the catalog model (the same in both clusters), a node type every NIC port of its profile; the
    cabled sub-ports of a split cage the cage's own name is not are 08 interfaces, labelled with their faceplate
    name. A switch type is its model under its NOS (the NOS names the ports), a DGX the hardware (review B7)."""
    types = {spec: {d["model"]: d for d in netbox_set(spec)["05-device-types"]} for spec in SPECS}
    shared = set(types["lab-1su"]) & set(types["h100-4su"])
    assert {"QM9700 faceplate", "SN4700 SONiC", "SN2201 SONiC"} <= shared
    for model in shared:
        assert types["lab-1su"][model] == types["h100-4su"][model], model
    qm9700 = [t["name"] for t in types["h100-4su"]["QM9700 faceplate"]["interfaces"]]
    assert qm9700 == ["mgmt0", *(f"{c}/{p}" for c in range(1, 33) for p in (1, 2))]  # no NOS: the faceplate
    sn4700 = [(t["name"], t["label"]) for t in types["h100-4su"]["SN4700 SONiC"]["interfaces"] if not t["mgmt_only"]]
    # 32 QSFP-DD cages, one port each unsplit: SONiC's Ethernet<first lane>, the cage number its label
    assert sn4700 == [(f"Ethernet{8 * (c - 1)}", str(c)) for c in range(1, 33)]
    assert types["h100-4su"]["DGX H100"]["manufacturer"] == "Nvidia"
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    devices = {d["name"]: d["device_type"] for d in netbox_set("h100-4su")["07-devices"]}
    for node in topology.cluster.nodes:
        ports = {(t["name"], t.get("label", t["name"])) for t in types["h100-4su"][devices[node.name]]["interfaces"]}
        p = node.profile
        assert {(n.netdev or n.port, n.port) for n in (*p.compute, *p.storage, *p.inband)} | (
            {(p.bmc.port, p.bmc.port)} if p.bmc else set()) == ports
    sub_ports = [r for r in netbox_set("h100-4su")["08-interfaces"] if r["type"] != "virtual"]
    assert sub_ports and all(r["description"] == f"sub-port of cage {r['label'].split('/')[0]}" for r in sub_ports)


# h100-4su's storage fabric under each NOS (test_golden's dialect cases): (text, replacement)
NOS_CASES = {"sonic": ("", ""),
             "eos": ("    switch: SN5600\n    nos: sonic\n", "    switch: {leaf: 7060DX5-64S, spine: 7060X6-64PE}\n"
                     "    nos: eos\n"),
             "nvue": ("    switch: SN5600\n    nos: sonic\n", "    switch: SN5600\n    nos: nvue\n")}


@pytest.mark.parametrize("nos", sorted(NOS_CASES))
def test_switch_ports_are_named_as_their_configuration_names_them(nos: str, tmp_path: Path) -> None:
    """D1: every cabled switch port's NetBox name is a port the switch's rendered configuration has (SONiC
    config_db.json's PORT, EOS's ``interface Ethernet..``, NVUE's ``swp..``), its label the faceplate name, and
    the switch's type is its model under the NOS."""
    old, new = NOS_CASES[nos]
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace(old, new))
    artifacts = {a.path: a.content for a in render_spec(compile_spec(spec))}
    configs: dict[str, str] = {}
    for path, content in artifacts.items():
        if path.startswith("switches/") and path.endswith((".json", ".cfg", ".yaml")):
            configs.setdefault(path.split("/")[1], "")
            configs[path.split("/")[1]] += content.decode()
    rows = [r for name, content in artifacts.items() if name.startswith("netbox/09-cables")
            for r in csv.DictReader(io.StringIO(content.decode()))]
    checked = 0
    for r in rows:
        for device, name in cable_ends(r):
            if device in configs and (nos != "sonic" or device.startswith("storage")):
                assert re.search(rf"(?<![\w/]){re.escape(name)}(?![\w/])", configs[device]), (device, name)
                checked += 1
    assert checked > 50
    models = {r["device_type"] for name, content in artifacts.items() if name.startswith("netbox/07-devices")
              for r in csv.DictReader(io.StringIO(content.decode())) if r["name"].startswith("storage")}
    title = {"sonic": "SONiC", "eos": "EOS", "nvue": "NVUE"}[nos]
    assert models and all(m.endswith(f" {title}") for m in models), models


@pytest.mark.parametrize("spec", SPECS)
def test_every_object_but_the_tag_and_field_carries_the_tag(spec: str) -> None:
    """The CSV set's objects are netbox sync's own (B1 of the NetBox review): a ``tags`` column with fabricgen's tag
    on every row whose form takes one, ``tags`` in every device-type YAML; 00-tags makes the tag first."""
    files = netbox_set(spec)
    assert files["00-tags"] == [{"name": netbox.TAG, "slug": netbox.TAG, "color": netbox.TAG_COLOUR,
                                 "weight": str(netbox.TAG_WEIGHT), "description": netbox.TAG_DESCRIPTION}]
    for name, rows in files.items():
        if name == "05-device-types":
            assert all(doc["tags"] == [netbox.TAG] for doc in rows)
            assert "tags" in form_fields("DeviceTypeImportForm")
        elif "tags" in form_fields(FILES[name][0]):
            assert all(r["tags"] == netbox.TAG for r in rows), name
        else:
            assert name in netbox.UNTAGGED and all("tags" not in r for r in rows), name


def test_nvidia_is_the_device_type_librarys_manufacturer() -> None:
    """devicetype-library's device-types/Nvidia/*.yaml say manufacturer ``Nvidia``: a NetBox holding them refuses
    another ``NVIDIA`` (name and slug unique), and the device-type and device imports find a manufacturer by name."""
    files = netbox_set("h100-4su")
    assert {r["name"] for r in files["03-manufacturers"]} == {"Nvidia", "Generic"}
    assert {d["manufacturer"] for d in files["05-device-types"] if d["model"] == "QM9700 faceplate"} == {"Nvidia"}
    assert netbox.manufacturer("Arista") == "Arista"


def test_a_request_is_cut_by_its_cost_not_its_bytes() -> None:
    assert netbox.budgeted([1, 2, 3, 4, 5], float, 5) == [[1, 2], [3], [4], [5]]
    assert netbox.budgeted([9, 1], float, 5) == [[9], [1]]  # an object over the budget goes alone
    assert netbox.budgeted([], float, 5) == []


@pytest.mark.parametrize("spec", SPECS)
def test_every_file_part_imports_within_one_requests_budget(spec: str) -> None:
    """B5 of the NetBox review: each CSV part costs NetBox, at the measured per-object rates, at most the budget
    that fits a stock NetBox's timeouts (nginx 60 s, gunicorn 120 s); parts joined are the whole table."""
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    imports = netbox.import_set(topology)
    costs = netbox.request_costs()
    assert costs.budget_s < 60
    ports = {str(d["model"]): netbox.templated_ports(d) for d in imports.device_types}
    artifacts = {a.path: a.content.decode() for a in netbox.render(topology)}
    for name, table in imports.tables.items():
        parts = [p for p in artifacts if re.fullmatch(rf"netbox/{name}(-part-[0-9a-fx]+-\d+)?\.csv", p)]
        rows = [r for p in parts for r in csv.reader(io.StringIO(artifacts[p]))
                if r != list(table.header)]
        assert sorted(rows) == sorted([str(v) for v in row] for row in table.rows), name
        for part in parts:
            part_rows = list(csv.DictReader(io.StringIO(artifacts[part])))
            kind = name.split("-", 1)[1]
            spent = sum(costs.of(kind) * (len(cable_ends(r, "a")) if kind == "cables" else 1)
                        + (costs.port_s * ports[r["device_type"]] if kind == "devices" else 0) for r in part_rows)
            assert spent <= costs.budget_s or len(part_rows) == 1, (part, spent)
    cables = [p for p in artifacts if p.startswith("netbox/09-cables")]
    # parts by links (a cable costs NetBox per link), whole cables in each: at most a part more than links alone
    by_links = -(-len(topology.cables) // int(costs.budget_s / costs.of("cables")))
    # stable cuts (netbox.stable_parts) cost parts: ~1.3x those of cuts by budget alone
    assert by_links <= len(cables) <= by_links * 3 // 2 + 2


def test_no_type_is_named_by_the_bare_catalog_model() -> None:
    """Review D3: the device-type library keys its types by manufacturer and the bare model (``Nvidia QM9700``,
    ``Nvidia SN5600``; NetBox holds one per pair), so no fabricgen type is: a switch whose ports keep the faceplate's
    names is ``<model> faceplate`` (slug ``qm9700-faceplate``), one under a NOS ``<model> <NOS>``."""
    for spec in SPECS:
        for d in netbox_set(spec)["05-device-types"]:
            if d["manufacturer"] != "Generic":
                assert d["model"] not in catalog.shipped("switches").entries, d["model"]
    qm9700 = next(d for d in netbox_set("lab-1su")["05-device-types"] if d["model"].startswith("QM9700"))
    assert (qm9700["model"], qm9700["slug"]) == ("QM9700 faceplate", "qm9700-faceplate")


def test_a_description_is_clamped_to_netboxs_limit_at_a_word() -> None:
    """NetBox 4.7.3 stores 200 characters of a description (field_limits.yaml) and refuses a longer one: fabricgen's
    are cut at the last word that fits, with an ellipsis, the same way every time; a shorter one is left whole."""
    assert netbox.clamp("storage pod-gateway") == "storage pod-gateway"
    text = "MPO12APC-4XLC-OS2-30M low-loss breakout harness, stock #0002 (qsfpdd-dr4-breakout-4x100g), " * 3
    cut = netbox.clamp(text)
    assert len(cut) <= 200 and cut.endswith("\u2026") and text.startswith(cut[:-1]) and text[len(cut) - 1] in " ,"
    assert netbox.clamp(text) == cut and netbox.clamp("x" * 300, 64) == "x" * 63 + "\u2026"


def test_the_longest_names_a_spec_may_give_fit_netbox(tmp_path: Path) -> None:
    """A name is an identity (a device's is its hostname on the configs and sheets), so it is never cut: the spec's
    own patterns keep it within NetBox's limits (field_limits.yaml). lab-1su with the longest node names its checks
    take (57 characters: an InfiniBand NodeDescription, ``<node> mlx5_7``, holds 64; a host name 63) and the
    longest rack names (32): every name, slug and label of the import set
    fits its NetBox field, and every description is at most 200 characters."""
    node = "gpu-node-in-the-east-wing-data-hall-of-the-second-bui"  # + 2 digits + "-x": 57
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("name: hgx{n:02d}", f"name: {node}{{n:02d}}-x")
    text = text.replace("hgx01", f"{node}01-x").replace("hgx08", f"{node}08-x")
    text = text.replace('groups: ["hgx{n:02d}"]', f'groups: ["{node}{{n:02d}}-x"]')
    text = text.replace("facility:\n", "facility:\n  rack_name: \"dh2-east-wing-cage-b123-row-{row}{rack:03d}\"\n", 1)
    spec = tmp_path / "long.yaml"
    spec.write_text(text)
    imports = netbox.import_set(compile_spec(spec).topology)
    devices = imports.records("07-devices")
    assert max(len(str(r["name"])) for r in devices) == 57 and max(len(str(r["rack"])) for r in devices) == 32
    limits = netbox.field_limits()["names"]
    columns = {"01-sites": {"name": "site name", "slug": "site slug"},
               "02-locations": {"name": "location name", "slug": "location slug"}, "06-racks": {"name": "rack name"},
               "07-devices": {"name": "device name"}, "08-interfaces": {"name": "interface name",
                                                                        "label": "interface label"},
               "12-vlan-groups": {"name": "VLAN group name", "slug": "VLAN group slug"},
               "13-vlans": {"name": "VLAN name"}, "14-vrfs": {"name": "VRF name"}}
    for table, fields in columns.items():
        for r in imports.records(table):
            for column, what in fields.items():
                assert len(str(r[column])) <= limits[what], (table, column, r[column])
    for cable in netbox.netbox_cables(compile_spec(spec).topology.cables):
        assert len(cable.label) <= limits["cable label"] and len(cable.description) <= 200
    for d in imports.device_types:
        assert all(len(p["name"]) <= limits["interface name"] for p in d["interfaces"])


def test_a_node_fewer_changes_the_parts_of_its_rows_only() -> None:
    """A part file is cut where its rows say (netbox.stable_parts), so one node fewer changes only the parts of
    runs that hold a row that changed (its device, cables and addresses, and what its removal renumbers: the cable
    ids after it on its leaves, the storage servers' addresses after it). Cut by count (part001, part002 ...), every
    part after the first changed row changed."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count("    count: 127\n") == 1
    fewer = load_text(text.replace("    count: 127\n", "    count: 126\n"), "h100-4su.yaml")
    before = netbox.import_set(compile_spec(INVENTORIES / "h100-4su.yaml").topology).tables
    after = netbox.import_set(compile_topology(build_cluster(fewer))).tables
    costs = netbox.request_costs()
    kept = moved = 0
    for name, table in before.items():
        seconds = (lambda _: 1.0) if name in ("07-devices", "09-cables") else (lambda _: costs.of("x"))
        old = dict(netbox.stable_parts(table, seconds, costs.budget_s))
        new = dict(netbox.stable_parts(after[name], seconds, costs.budget_s))
        touched = set(table.rows) ^ set(after[name].rows)
        runs = {p.rsplit("-", 1)[0] for parts in (old, new) for p, rows in parts.items() if touched & set(rows)}
        changed = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
        assert {p.rsplit("-", 1)[0] for p in changed} <= runs, name
        kept += len(old.keys() - changed)
        moved += len(changed)
    assert moved and kept > 3 * moved, (kept, moved)
