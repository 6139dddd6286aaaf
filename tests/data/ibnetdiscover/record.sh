#!/usr/bin/env bash
# Boot each tiny-*.net in ibsim, bring the subnet up with OpenSM (so LIDs are assigned) and record both
# ibnetdiscover forms: <name>.topology.txt (default) and <name>.ports.txt (-p).
# Needs Debian's ibsim-utils (0.10), opensm and infiniband-diags. Run from anywhere.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sim="$(dpkg -L libumad2sim0 | grep 'libumad2sim\.so$' | head -n 1)"
work="$(mktemp -d)"
pid=""
cleanup() {
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

for net in "$here"/tiny-*.net; do
    name="$(basename "$net" .net)"
    export IBSIM_SOCKNAME="fabricgen-record-$$-$name" OSM_TMP_DIR="$work/$name" OSM_CACHE_DIR="$work/$name"
    mkdir -p "$OSM_TMP_DIR"
    ibsim -s -n "$net" >"$work/$name.ibsim.log" 2>&1 &
    pid=$!
    sleep 1
    LD_PRELOAD="$sim" opensm -e -o -s 0 -f "$work/$name/opensm.log" >/dev/null 2>&1
    grep -q 'SUBNET UP' "$work/$name/opensm.log"
    LD_PRELOAD="$sim" ibnetdiscover >"$here/$name.topology.txt" 2>/dev/null
    LD_PRELOAD="$sim" ibnetdiscover -p >"$here/$name.ports.txt" 2>/dev/null
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
    echo "recorded $name"
done
