"""Where the loader finds secret values written (review B6): the exact text of each, so a source line shown under a
problem hides that text and nothing else."""

from __future__ import annotations

from fabricgen.core.document import SourceSpan
from fabricgen.spec.load import load_text, secret_spans

SPEC = """\
management:
  tacacs: {key: {env: TACACS_KEY}, servers: [10.99.0.49]}   # read on the switch
  snmp:
    community:
      file: /etc/snmp-community
partitions:
  - {name: training, pkey: "0x8001"}
keys:
  sm_key: {env: OPENSM_SM_KEY}
  m_key: 0x1234
"""


def _texts(spans: tuple[SourceSpan, ...]) -> list[str]:
    lines = SPEC.splitlines()
    shown = []
    for span in spans:
        for number in range(span.line, span.end_line + 1):
            cut = span.on_line(number, lines[number - 1])
            if cut is not None:
                shown.append(lines[number - 1][cut[0]:cut[1]])
    return shown


def test_each_secret_value_is_recorded_as_written_and_a_pkey_is_not() -> None:
    load_text(SPEC, "spans.yaml")
    spans = secret_spans("spans.yaml")
    assert spans is not None
    # flow values whole (braces balanced); a block mapping under a secret key keeps its keys readable
    assert _texts(spans) == ["{env: TACACS_KEY}", "/etc/snmp-community", "{env: OPENSM_SM_KEY}",
                                             "0x1234"]


def test_a_source_never_composed_has_no_spans() -> None:
    assert secret_spans("never-loaded.yaml") is None
