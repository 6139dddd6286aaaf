"""`fabricgen netbox sync` against a NetBox that cannot finish its batches in time: the harness's NetBox 4.7.3 served
by a second gunicorn whose workers are aborted after a few seconds (as NetBox's own contrib/gunicorn.py does after
120 s), with sync's request budget lifted so its first batches are sure to overrun. Every batch NetBox does not
answer is read back (gunicorn may abort a worker after NetBox committed) and what is missing sent again in halves:
the sync ends with the plan's objects, none twice, and a second sync writes nothing."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabricgen.features.netbox import sync as netbox_sync
from fabricgen.features.netbox.render import RequestCosts, netbox_cables, request_costs
from fabricgen.features.netbox.sync import sync, token_value
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.netbox import Session, require_netbox, reset

SITE = "lab-overrun"
TIMEOUT_S = 8  # longer than any read of lab-1su's (a page of 1,000 interfaces: ~4 s here), far shorter than its writes
BOOT_S = 180


def _topology(tmp_path: Path) -> Topology:
    """lab-1su in a site of its own, its pools moved (10.4x -> 10.3x) clear of the other NetBox tests' sites."""
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    spec = tmp_path / "lab-overrun.yaml"
    spec.write_text(re.sub(r"\b10\.4([0-6])\.", r"10.3\1.", text))
    return compile_spec(spec).topology


@pytest.fixture
def impatient_netbox(tmp_path: Path) -> Iterator[tuple[dict[str, str], str]]:
    """(the harness's environment, the URL of a gunicorn serving the same NetBox with a TIMEOUT_S worker timeout;
    --preload: NetBox loads once in the arbiter, a worker booting within the timeout)."""
    env = require_netbox()
    if Session(env).count("dcim/sites", slug=SITE):
        reset(env)  # left by an earlier run of this test
    port = int(env["FABRICGEN_NETBOX_URL"].rsplit(":", 1)[1]) + 1
    root = Path(env["FABRICGEN_NETBOX_DIR"])
    server = subprocess.Popen(
        [str(root / "venv" / "bin" / "gunicorn"), "--chdir", str(root / "root"), "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--timeout", str(TIMEOUT_S), "--preload", "netbox.wsgi"],
        env={**os.environ, "NETBOX_ROOT": str(root / "root")}, stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "gunicorn.log").open("w"), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + BOOT_S
        while True:
            try:
                urllib.request.urlopen(f"{url}/login/", timeout=10).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    log = (tmp_path / "gunicorn.log").read_text()[-2000:]
                    pytest.fail(f"the second gunicorn did not answer: {log}")
                time.sleep(1)
        yield env, url
    finally:
        server.send_signal(signal.SIGQUIT)  # quick shutdown
        server.wait(timeout=60)
        # a worker still inside an aborted request outlives its arbiter's quick shutdown (one was left per run,
        # serving the port and holding NetBox's memory): the server's session, its own, goes with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)


def test_sync_halves_what_netbox_does_not_answer_in_time(impatient_netbox: tuple[dict[str, str], str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    env, url = impatient_netbox
    costs = request_costs()
    monkeypatch.setattr(netbox_sync, "request_costs", lambda: RequestCosts(
        100 * costs.budget_s, costs.default_s, costs.port_s, costs.per_object_s))  # every type in one batch first
    topology = _topology(tmp_path)
    token = token_value(env["FABRICGEN_NETBOX_TOKEN"])
    report = sync(topology, url, token, dry_run=False)
    print(f"\nsync at a {TIMEOUT_S} s worker timeout: {dict(report.requests)} requests in {report.seconds:.1f} s, "
          f"overruns {dict(report.overruns)}")
    assert report.overruns["creating dcim.cables"] >= 1  # 166 cables in one request: minutes of NetBox's work
    devices = len(topology.cluster.nodes) + sum(len(ft.switches) for ft in topology.fabrics)
    cables = len(netbox_cables(topology.cables))
    assert report.counts["devices"]["create"] == devices and report.counts["cables"]["create"] == cables
    session = Session(env)
    assert session.count("dcim/devices", site=SITE) == devices
    assert session.count("dcim/cables", site=SITE) == cables  # none made twice by a batch sent again
    # and the rest: a second sync finds every object there, as the spec has it
    again = sync(topology, url, token, dry_run=False)
    assert again.writes == 0 and again.changes == 0, again.counts
