"""The bottom layer, known to every other: errors and the issue collector, the spec document's positions,
artifacts, name checks, hints, shipped resources and the template environment. Imports nothing of fabricgen's."""
