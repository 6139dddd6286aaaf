"""Where a first ``fabricgen netbox sync`` spends its time (README "NetBox sync", issue 19).

Runs the sync of a spec into a site of its own (``--site``: each run needs one NetBox does not hold yet) and records
every request: method, endpoint, objects sent and the time NetBox took to answer (``response.elapsed``: NetBox
renders the whole response before its headers, so this is NetBox's own work plus loopback); the rest of the wall
time is fabricgen's. ``--budget`` sets the seconds of NetBox's work one write request may carry, at the rates of
features/netbox/request_costs.yaml (sync's batches follow it; the README's runs of "batch 100/500" were made when a
batch was a fixed object count), ``--parallel`` sends a type's write batches that many at a time (the harness's
gunicorn has 2 workers).

    source /var/tmp/fabricgen-netbox/env
    PYTHONPATH=cli .venv/bin/python bench/netbox_sync.py inventories/lab-1su.yaml --site prof-1
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fabricgen.features.netbox import render as nbrender
from fabricgen.features.netbox import sync as nbsync
from fabricgen.pipeline import compile_spec

Row = tuple[str, str, int, float, float]  # method, endpoint, objects sent, seconds NetBox took, when it answered


def _record(rows: list[Row]) -> Callable[..., None]:
    def hook(response: Any, *_: Any, **__: Any) -> None:
        request = response.request
        endpoint = re.sub(r"^.*/api/|\?.*$|/\d+/$", "", request.url)
        body = json.loads(request.body) if request.body else None
        rows.append((request.method, endpoint.rstrip("/"), len(body) if isinstance(body, list) else 1,
                     response.elapsed.total_seconds(), time.monotonic()))
    return hook


def _parallel_writes(workers: int) -> None:
    """NetBox.write with each of a type's create batches sent ``workers`` at a time (deletions and updates as
    before)."""
    original = nbsync.NetBox.write

    def write(self: nbsync.NetBox, path: str, changes: nbsync.Changes,
              seconds: Callable[[nbsync.Json], float] | None = None) -> dict[Any, int]:
        costs = nbrender.request_costs()
        each = costs.of(path.split(".")[1])
        batches = nbrender.budgeted(changes.create, lambda item: seconds(item[1]) if seconds else each, costs.budget_s)
        if self.dry_run or len(batches) <= 1:
            return original(self, path, changes, seconds)
        made = original(self, path, nbsync.Changes(update=changes.update, delete=changes.delete), seconds)
        with ThreadPoolExecutor(workers) as pool:
            for part in pool.map(lambda b: original(self, path, nbsync.Changes(create=b), seconds), batches):
                made |= part
        return made

    nbsync.NetBox.write = write  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--site", required=True, help="a site NetBox does not hold yet")
    parser.add_argument("--budget", type=float, default=nbrender.request_costs().budget_s,
                        help="seconds of NetBox's work per write request")
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    text = re.sub(r"(?m)^  site: .*$", f"  site: {args.site}", args.spec.read_text())
    spec = Path(f"/tmp/netbox-sync-{args.site}.yaml")
    spec.write_text(text)
    topology = compile_spec(spec).topology
    costs = nbrender.request_costs()
    budgeted = nbrender.RequestCosts(args.budget, costs.default_s, costs.port_s, costs.per_object_s)
    # sync's batches and this file's parallel batches both read the budget through render.request_costs
    setattr(nbsync, "request_costs", lambda: budgeted)  # noqa: B010
    setattr(nbrender, "request_costs", lambda: budgeted)  # noqa: B010
    if args.parallel > 1:
        _parallel_writes(args.parallel)
    rows: list[Row] = []
    original_init = nbsync.NetBox.__init__

    def init(self: nbsync.NetBox, *a: Any, **k: Any) -> None:
        original_init(self, *a, **k)
        self.api.http_session.hooks["response"].append(_record(rows))

    nbsync.NetBox.__init__ = init  # type: ignore[method-assign]
    start = time.monotonic()
    report = nbsync.sync(topology, os.environ["FABRICGEN_NETBOX_URL"],
                         nbsync.token_value(os.environ["FABRICGEN_NETBOX_TOKEN"]), dry_run=False)
    wall = time.monotonic() - start
    per: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for method, endpoint, objects, seconds, _ in rows:
        entry = per[(method, endpoint)]
        entry[0] += 1
        entry[1] += objects
        entry[2] += seconds
    print(f"{'method':6} {'endpoint':32} {'requests':>8} {'objects':>8} {'s':>8} {'s/object':>9}")
    for (method, endpoint), (n, sent, spent) in sorted(per.items(), key=lambda i: -i[1][2]):
        print(f"{method:6} {endpoint:32} {n:8.0f} {sent:8.0f} {spent:8.1f} {spent / sent:9.4f}")
    print(f"wall {wall:.1f} s: NetBox answering {_busy(rows):.1f} s of it ({sum(r[3] for r in rows):.1f} s summed over "
          f"requests, {args.parallel} at a time), fabricgen the rest; budget {args.budget} s; "
          f"{sum(report.requests.values())} requests")


def _busy(rows: list[Row]) -> float:
    """Seconds in which at least one request was waiting for NetBox (the union of the requests' intervals)."""
    busy, until = 0.0, float("-inf")
    for start, end in sorted((answered - seconds, answered) for *_, seconds, answered in rows):
        busy += max(0.0, end - max(start, until))
        until = max(until, end)
    return busy


if __name__ == "__main__":
    main()
