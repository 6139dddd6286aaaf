"""Plain YAML data, parsed by libyaml where PyYAML has it: fabricgen's own data files and the YAML artifacts its
read-backs parse again.

CSafeLoader is yaml.safe_load's constructor and resolver over libyaml's parser (the same data), ~8x faster than
the pure-Python parser yaml.safe_load uses: the SONiC SKU files alone took 0.2 s of every compile that way.
"""

from __future__ import annotations

from typing import IO, Any

import yaml

LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """What ``yaml.safe_load(stream)`` returns."""
    return yaml.load(stream, Loader=LOADER)
