"""Cabling: the cable plan (one cable per link, located, measured and chosen from the catalog's media), its checks,
and the handoff to the datacenter team: cable sheets and NetBox imports, the XLSX workbook, the fabric diagram."""

from __future__ import annotations

from dataclasses import replace

from fabricgen.core.artifacts import Table
from fabricgen.features.cabling import checks, diagram, printout, sheets, workbook
from fabricgen.features.cabling.plan import plan_cables
from fabricgen.features.feature import Feature, Target
from fabricgen.model.topology import Topology


def _plan(topology: Topology) -> Topology:
    return replace(topology, cables=plan_cables(topology.cluster, topology.fabrics))


FEATURE = Feature(
    "cabling",
    compile=_plan,
    checks=(checks.cable_plan,),
    targets=(Target("workbook", workbook.render, shares="cable sheets"),
             Target("print", printout.render, shares="cable sheets"),
             Target("cabling", sheets.render), Target("diagram", diagram.render)),
    # A cable is its two ends; its id (the label on the installed cable) is its place among its switch's cables in
    # port order, so plan lists relabels (same ends, new id) and re-patches (same id, other ends) apart;
    # a cable whose only change is its estimated run (run_m; its orderable length_m and part stay) is not re-pulled;
    # the rows of one physical cable (a splitter's legs, a cage-pair cable's links) are one change: the cable's.
    tables=(Table("cabling/cables.csv", "cable", ("a_device", "a_port", "z_device", "z_port"),
                  "{a_device}:{a_port} <-> {z_device}:{z_port}",
                  parts=(("port", "{a_device}:{a_port}", "{a_device}"), ("port", "{z_device}:{z_port}", "{z_device}")),
                  derived=("physical_cable", "label", "a_label", "z_label"),
                  labels=("cable_id", "label", "a_label", "z_label"), estimates=("run_m",), item="physical_cable",
                  devices=("a_device", "z_device")),
            # A printed sheet (a rack's, a fabric's) is its title; its revision, the digest of what it prints, is
            # what a plan compares with the sheet on a technician's clipboard, and names a sheet added or removed by.
            Table("cabling/revisions.csv", "sheet", ("sheet",), "{sheet}", derived=("files",),
                  mark="revision {revision}")),
)
