"""One package per domain of the cluster; each exports one :class:`~fabricgen.features.feature.Feature` record
(``FEATURE`` in its ``__init__``) and :mod:`fabricgen.features.registry` orders them for the stages."""
