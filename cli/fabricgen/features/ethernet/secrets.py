"""management-secrets.sh: what a switch's configuration leaves out of the management baseline, applied on the switch.

The TACACS+ key and the SNMP community are never in an artifact: the spec names where each is read (an
environment variable or a file on the switch), and this script, one per switch in its NOS's own commands
(``templates/<nos>/management-secrets.sh.j2``), reads them there and applies them without printing them or putting
them on a command line. TACACS+ login is turned on only here, after the key: a switch whose configuration asked for
TACACS+ login without a key would lock out every user (SONiC's YANG refuses it).
"""

from __future__ import annotations

from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.features.ethernet.switch_view import SwitchView


def management_secrets(view: SwitchView, source: str, **context: Any) -> list[Artifact]:
    """The switch's management-secrets.sh, when its baseline has secrets (none otherwise)."""
    if view.baseline is None or not view.baseline.secrets:
        return []
    content = render_template(f"{view.nos}/management-secrets.sh.j2", switch=view.name, source=source,
                              m=view.baseline, **context)
    return [Artifact(f"switches/{view.name}/management-secrets.sh", content, 0o755)]
