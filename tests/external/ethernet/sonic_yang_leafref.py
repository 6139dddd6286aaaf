"""Run the shared SONiC YANG validator with leafref keys typed as their target: SONiC's own translation
(sonic-yang-mgmt sonic_yang_ext.py, ``_findYangTypedValue``) follows a leafref to the leaf it points at, so
MCLAG_INTERFACE's ``domain_id`` (a leafref to MCLAG_DOMAIN's uint16) is a number in YANG JSON; the shared validator's
``conv`` keeps a leafref a string, which libyang refuses. Usage: sonic_yang_leafref.py VALIDATOR_DIR config_db.json
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


def main(validator: Path, config: str) -> int:
    spec = importlib.util.spec_from_file_location("validate_config_db", validator / "validate_config_db.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plain = module.conv
    leafref = module.libyang.schema.Type.LEAFREF

    class Target:
        """A leaf whose type is the leafref's target type."""

        def __init__(self, type_: Any) -> None:
            self._type = type_

        def type(self) -> Any:
            return self._type

    def conv(leaf: Any, value: str) -> Any:
        type_ = leaf.type()
        while type_.base() == leafref:
            type_ = type_.leafref_type()
        return plain(Target(type_), value)

    module.conv = conv
    return int(module.main(str(validator / "models"), config))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
