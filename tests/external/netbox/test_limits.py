"""NetBox's field limits against a real NetBox 4.7.3 (tests/external/netbox/netbox-up): lab-1su with part names of
the catalog's longest for its OOB uplink breakouts (tests/data/netbox/long-part-media.yaml) has cable descriptions
that run past the 200 characters NetBox stores; sync sends them clamped (render.clamp), NetBox takes them, holds
them as sent, refuses one character more, and a second sync writes nothing."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from fabricgen.features.netbox.render import field_limits, netbox_cables
from fabricgen.features.netbox.sync import sync, token_value
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.netbox import Session, require_netbox, reset

SITE = "lab-limits"
MEDIA = Path(__file__).parents[2] / "data" / "netbox" / "long-part-media.yaml"


def test_descriptions_past_netboxs_limit_are_clamped_and_taken(tmp_path: Path) -> None:
    env = require_netbox()
    session = Session(env)
    if session.records("dcim/sites", slug=SITE):
        reset(env)
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    spec = tmp_path / "lab-limits.yaml"
    spec.write_text(text.replace("facility:\n", MEDIA.read_text() + "facility:\n", 1))
    topology = compile_spec(spec).topology
    limit = int(field_limits()["description"])
    clamped = {c.label: c.description for c in netbox_cables(topology.cables) if c.description.endswith("\u2026")}
    assert clamped and all(len(d) <= limit and "low-loss breakout harness" in d for d in clamped.values())
    url, token = env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"])
    first = sync(topology, url, token, dry_run=False)
    print(f"\nfirst sync: {first.seconds:.1f} s, {len(clamped)} descriptions clamped to {limit}")
    site = str(session.records("dcim/sites", slug=SITE)[0]["id"])
    held = {c["label"]: c for c in session.records("dcim/cables", site_id=site, fields="id,label,description")}
    assert {label: held[label]["description"] for label in clamped} == clamped
    some = held[min(clamped)]
    longer = some["description"] + "x" * (limit + 1 - len(some["description"]))
    with pytest.raises(urllib.error.HTTPError) as refused:  # what an unclamped description meets
        session.patch("dcim/cables", some["id"], {"description": longer})
    assert refused.value.code == 400 and "200" in refused.value.read().decode()
    again = sync(topology, url, token, dry_run=False)
    assert again.writes == 0, again.counts
