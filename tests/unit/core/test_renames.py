"""A renamed device told by where it stands, the rule NetBox sync and plan share."""

from __future__ import annotations

from fabricgen.core.renames import occupants, renamed_devices


def test_a_renamed_row_renames_its_racks_then_its_top_of_rack_switches() -> None:
    """Row L renamed K: racks L01, L02 are K01, K02 by the nodes that keep their names in them; the switch at each
    one's U 48 of the same type is the old one renamed."""
    before = {"hgx01": ("L01", "2", "front", "hgx"), "hgx03": ("L02", "2", "front", "hgx"),
              "oob-l01": ("L01", "48", "front", "SN2201"), "oob-l02": ("L02", "48", "front", "SN2201"),
              "agg": ("M01", "15", "front", "SN4700")}
    after = {"hgx01": ("K01", "2", "front", "hgx"), "hgx03": ("K02", "2", "front", "hgx"),
             "oob-k01": ("K01", "48", "front", "SN2201"), "oob-k02": ("K02", "48", "front", "SN2201"),
             "agg": ("M01", "15", "front", "SN4700")}
    assert renamed_devices(before, after) == {"oob-l01": "oob-k01", "oob-l02": "oob-k02"}


def test_no_rename_where_the_place_type_or_count_differs() -> None:
    racked = {"a": ("R1", "48", "front", "SN2201"), "n": ("R1", "2", "front", "hgx")}
    assert renamed_devices(racked, {"b": ("R1", "47", "front", "SN2201"), "n": racked["n"]}) == {}  # another U
    assert renamed_devices(racked, {"b": ("R1", "48", "rear", "SN2201"), "n": racked["n"]}) == {}  # face
    assert renamed_devices(racked, {"b": ("R1", "48", "front", "SN4700"), "n": racked["n"]}) == {}  # type
    # two new devices where one stood: no guess; nor for devices that are not racked
    assert renamed_devices({**racked, "x": ("", "", "", "t")}, {"b": racked["a"], "c": racked["a"],
                                                               "y": ("", "", "", "t"), "n": racked["n"]}) == {}
    # a rack whose devices are all renamed cannot be told (nothing in it keeps its name): no rename in it
    assert renamed_devices({"a": ("R1", "48", "front", "t")}, {"b": ("R2", "48", "front", "t")}) == {}
    assert renamed_devices({"a": ("R1", "48", "front", "t")}, {"b": ("R1", "48", "front", "t")}) == {"a": "b"}


def test_occupants_are_the_members_both_sides_name() -> None:
    assert occupants([("R1", "a"), ("R1", "b"), ("R2", "c")], {"a", "c", "z"}) == {
        "R1": frozenset({"a"}), "R2": frozenset({"c"})}
