"""A user's session on a running NetBox (tests/external/netbox/netbox-up starts one): log in through the login
page, paste a file into an object type's bulk-import view, count objects through the REST API."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "external" / "netbox" / "netbox-up"
ENV = ("FABRICGEN_NETBOX_URL", "FABRICGEN_NETBOX_USER", "FABRICGEN_NETBOX_PASSWORD", "FABRICGEN_NETBOX_TOKEN",
       "FABRICGEN_NETBOX_DIR")
# An import file's object type (09-cables-part-3f09a1c2e4b7-01.csv: cables) -> the bulk-import view it is pasted into
IMPORT_VIEWS = {"tags": "extras/tags", "custom-fields": "extras/custom-fields", "sites": "dcim/sites",
                "locations": "dcim/locations", "manufacturers": "dcim/manufacturers",
                "device-roles": "dcim/device-roles", "device-types": "dcim/device-types", "racks": "dcim/racks",
                "devices": "dcim/devices", "interfaces": "dcim/interfaces", "cables": "dcim/cables",
                "rirs": "ipam/rirs", "asns": "ipam/asns", "vlan-groups": "ipam/vlan-groups", "vlans": "ipam/vlans",
                "vrfs": "ipam/vrfs", "prefixes": "ipam/prefixes", "ip-addresses": "ipam/ip-addresses"}
_OBJECT_TYPE = re.compile(r"^\d\d-([a-z-]+?)(?:-part-[0-9a-fx]+-\d+)?(?:\.csv|/.*)$")
HARNESS_WAIT_S = 40 * 60  # pip and ~350 migrations on a busy 2-core machine
# A line of the harness's env file: export NAME='value' (its values hold no quote)
_ENV_LINE = re.compile(r"^export (FABRICGEN_NETBOX_[A-Z]+)='([^']*)'$", re.M)
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
# NetBox's bulk import shows a refused file's errors ("Record <n> <field>: <message>") as error toasts, and an error
# of the form itself (the data's format) under its field
_ERRORS = re.compile(r'<div class="toast-header text-bg-danger">.*?</div>\s*<div class="toast-body">(.*?)</div>'
                     r'|<div class="form-text text-danger"[^>]*>(.*?)</div>', re.S)


def require_netbox() -> dict[str, str]:
    """The harness's environment; skip when no NetBox runs locally, fail when CI requires it."""
    _await_harness()
    missing = [name for name in ENV if not os.environ.get(name)]
    if not missing:
        return {name: os.environ[name] for name in ENV}
    if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"a running NetBox is required in CI but {', '.join(missing)} is not set (.ci/run sources the "
                    "env file of tests/external/netbox/netbox-up)")
    pytest.skip("no NetBox running: start one with tests/external/netbox/netbox-up and source its env file")


def _await_harness() -> None:
    """Wait for the harness .ci/run started in the background (its ~15 minutes of pip and migrations overlap the
    tests before this one), then take its env file: FABRICGEN_NETBOX_PENDING names the file the harness's exit
    status is written to, its log beside it (<status>.log)."""
    pending = os.environ.get("FABRICGEN_NETBOX_PENDING")
    if not pending or all(os.environ.get(name) for name in ENV):
        return
    status = Path(pending)
    deadline = time.monotonic() + HARNESS_WAIT_S
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the NetBox harness started by .ci/run wrote no exit status in {HARNESS_WAIT_S} s")
        time.sleep(2)
    log = Path(f"{pending}.log")
    if status.read_text().strip() != "0":
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
        pytest.fail(f"the NetBox harness failed (exit {status.read_text().strip()}):\n{tail}")
    env_file = Path(os.environ.get("FABRICGEN_NETBOX_DIR", "/var/tmp/fabricgen-netbox")) / "env"
    for name, value in _ENV_LINE.findall(env_file.read_text()):
        os.environ[name] = value


def reset(env: dict[str, str]) -> None:
    """Back to the freshly migrated database (the superuser and its token kept)."""
    subprocess.run([str(HARNESS), "--reset"], check=True, env={**os.environ, **env}, capture_output=True,
                   timeout=300)


class Session:
    """A logged-in browser session: what a user does in the web UI, cookies and CSRF token included."""

    def __init__(self, env: dict[str, str]) -> None:
        self.url = env["FABRICGEN_NETBOX_URL"]
        self.token = env["FABRICGEN_NETBOX_TOKEN"]
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        page = self._get("/login/")
        answer = self._post("/login/", {"csrfmiddlewaretoken": _csrf(page), "username": env["FABRICGEN_NETBOX_USER"],
                                        "password": env["FABRICGEN_NETBOX_PASSWORD"], "next": "/"})
        if "/login/" in answer[0]:
            raise AssertionError("NetBox refused the harness's superuser login")

    def _get(self, path: str) -> str:
        with self.opener.open(self.url + path, timeout=60) as response:
            return str(response.read().decode())

    def _post(self, path: str, fields: dict[str, str]) -> tuple[str, str]:
        """(final URL after redirects, page)."""
        body = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.url + path, data=body, headers={"Referer": self.url + path})
        with self.opener.open(request, timeout=1800) as response:
            return str(response.geturl()), str(response.read().decode())

    def bulk_import(self, name: str, data: str) -> list[str]:
        """Paste one import file into its object type's bulk-import view, as a user would; NetBox's errors (none when
        it imported the file)."""
        kind = _OBJECT_TYPE.fullmatch(name)
        assert kind, f"{name} is no import file"
        path = f"/{IMPORT_VIEWS[kind.group(1)]}/import/"
        final, page = self._post(path, {"csrfmiddlewaretoken": _csrf(self._get(path)), "import_method": "direct",
                                        "data": data, "format": "auto", "csv_delimiter": "auto",
                                        "changelog_message": ""})
        if urllib.parse.urlparse(final).path != path:
            return []  # redirected to the object list: imported
        errors = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", "".join(e))).split()) for e in _ERRORS.findall(page)]
        return errors or [f"{name}: not imported and no error shown (page {final})"]

    def count(self, endpoint: str, **query: str) -> int:
        """Objects of a REST endpoint (``dcim/devices``) matching ``query``, read with the API token."""
        params = urllib.parse.urlencode({**query, "limit": 1, "brief": 1})
        request = urllib.request.Request(f"{self.url}/api/{endpoint}/?{params}",
                                         headers={"Authorization": self.token, "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(json.load(response)["count"])

    def records(self, endpoint: str, **query: str) -> list[dict[str, Any]]:
        """Every object of a REST endpoint matching ``query`` (all pages), read with the API token."""
        found: list[dict[str, Any]] = []
        url: str | None = f"{self.url}/api/{endpoint}/?" + urllib.parse.urlencode({**query, "limit": 1000})
        while url:
            request = urllib.request.Request(url, headers={"Authorization": self.token, "Accept": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as response:
                page = json.load(response)
            found += page["results"]
            url = page["next"]
        return found

    def patch(self, endpoint: str, pk: int, fields: dict[str, Any]) -> dict[str, Any]:
        """Change one object through the REST API with the token, as a crew's script or the UI's edit form does."""
        request = urllib.request.Request(f"{self.url}/api/{endpoint}/{pk}/", data=json.dumps(fields).encode(),
                                         method="PATCH", headers={"Authorization": self.token,
                                                                  "Content-Type": "application/json",
                                                                  "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer: dict[str, Any] = json.load(response)
        return answer

    def delete(self, endpoint: str, ids: list[int]) -> None:
        """Delete objects through the REST API with the token (NetBox's bulk DELETE: a list of ids)."""
        request = urllib.request.Request(f"{self.url}/api/{endpoint}/",
                                         data=json.dumps([{"id": i} for i in ids]).encode(), method="DELETE",
                                         headers={"Authorization": self.token, "Content-Type": "application/json",
                                                  "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=300):
            pass


def _csrf(page: str) -> str:
    match = _CSRF.search(page)
    if match is None:
        raise AssertionError("NetBox's page carries no CSRF token")
    return match.group(1)


Ends = list[tuple[str, str]]  # (device, interface) in connector order


def cable_ends(row: dict[str, str], sides: str = "ab") -> Ends:
    """A 09-cables row's (device, interface) ends, side A's then side B's, each side in connector order: NetBox
    >= 4.7's CableImportForm takes a side's interfaces comma-separated, with one device for all or one per
    interface, paired by position."""
    ends: Ends = []
    for side in sides:
        names = row[f"side_{side}_name"].split(",")
        devices = row[f"side_{side}_device"].split(",")
        assert len(devices) in (1, len(names)), row
        ends += list(zip(devices * len(names) if len(devices) == 1 else devices, names, strict=True))
    return ends


def held_cables(session: Session, site: int) -> dict[str, tuple[Ends, Ends, float, str]]:
    """The site's cables in NetBox: label -> (A ends, B ends in connector order, length, profile)."""
    names = {i["id"]: (i["device"]["name"], i["name"]) for i in session.records(
        "dcim/interfaces", site_id=str(site), fields="id,device,name")}
    cables = {}
    for c in session.records("dcim/cables", site_id=str(site),
                             fields="id,label,length,profile,a_terminations,b_terminations"):
        ends = [[names[t["object_id"]] for t in c[f"{side}_terminations"]] for side in "ab"]
        cables[c["label"]] = (ends[0], ends[1], float(c["length"]), (c["profile"] or {}).get("value", ""))
    return cables


def traced_peers(session: Session, site: int) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Every cabled interface of the site -> the interfaces NetBox's path tracing reaches at the far end (its
    ``connected_endpoints``): a trunk cable's link k must reach link k's far interface only."""
    return {(i["device"]["name"], i["name"]): sorted((e["device"]["name"], e["name"])
                                                     for e in i["connected_endpoints"] or ())
            for i in session.records("dcim/interfaces", site_id=str(site), cabled="true",
                                     fields="device,name,connected_endpoints")}

