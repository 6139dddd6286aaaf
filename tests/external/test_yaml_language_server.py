"""The real yaml-language-server (npm, the server of VS Code's YAML extension) over LSP on a spec that names the
checked-in editor schema in its modeline: a typo is flagged, a field hovers with its description, a switch value
completes with the catalog's models. Every HTTP request the server could make goes to a dead proxy, so the schema
must resolve offline (the section files' remote $ids made it fail before)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from tests.conftest import REPO, require_tool

SCHEMA = REPO / "schemas" / "fabricgen.editor.json"
SETTINGS = {
    "yaml": {"validate": True, "hover": True, "completion": True, "schemaStore": {"enable": False},
             "schemas": {}, "format": {"enable": False}},
    "http": {"proxy": "http://127.0.0.1:9", "proxyStrictSSL": True},  # nothing listens on the discard port
    "[yaml]": {},
    "editor": {"tabSize": 2},
}
SPEC = f"""\
# yaml-language-server: $schema={SCHEMA.as_uri()}
apiVersion: fabricgen/v1
kind: Cluster
metadata: {{name: lsp-test}}
facility:
  rows: [{{name: A, racks: 4}}]
nodes:
  - name: "gpu{{n:02d}}"
    count: 8
    profile: dgx-h100
    placement: {{rows: [A], per_rak: 4}}
fabrics:
  compute:
    type: infiniband
    speed: NDR
    switch: Q
    topology: {{kind: rail-optimized}}
"""


class LanguageServer:
    """A minimal LSP client: Content-Length framed JSON-RPC on the server's stdin/stdout."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={**os.environ, "NO_PROXY": ""})
        self.messages: Queue[dict[str, Any]] = Queue()
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == self.next_id and "method" not in m, timeout)
        assert "error" not in reply, reply
        return reply.get("result")

    def wait(self, match: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """The next message ``match`` accepts; answers the server's own requests on the way."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError(f"no matching message from yaml-language-server in {timeout} s") from None
            if "method" in message and "id" in message:
                self._answer(message)
            elif "method" in message:
                self.notifications.append(message)
            if match(message):
                return message

    def _answer(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [SETTINGS.get(item.get("section", ""), {}) for item in message["params"]["items"]]
        self.send({"id": message["id"], "result": result})

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    executable = require_tool("yaml-language-server")
    ls = LanguageServer([executable, "--stdio"])
    try:
        ls.request("initialize", {
            "processId": os.getpid(), "rootUri": tmp_path.as_uri(),
            "capabilities": {"workspace": {"configuration": True},
                             "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                                              "completion": {"completionItem": {"snippetSupport": False}}}},
        })
        ls.notify("initialized", {})
        ls.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})
        yield ls
    finally:
        ls.close()


def _position(text: str, needle: str, offset: int = 0) -> dict[str, int]:
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)}


def test_typo_hover_and_completion_offline(server: LanguageServer, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    uri = spec.as_uri()
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": SPEC}})
    published = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and bool(m["params"]["diagnostics"]))
    diagnostics = published["params"]["diagnostics"]
    messages = [d["message"] for d in diagnostics]
    assert not any("resolve" in m or "Unable to load" in m for m in messages), messages
    typo = [d for d in diagnostics if "per_rak" in d["message"]]
    assert typo, messages
    assert typo[0]["range"]["start"] == _position(SPEC, "per_rak")
    assert "not allowed" in typo[0]["message"]

    hover = server.request("textDocument/hover",
                           {"textDocument": {"uri": uri}, "position": _position(SPEC, "count", 1)})
    assert hover is not None
    assert "Number of nodes in the group." in json.dumps(hover["contents"])
    # the heading is the field's own or none: a section's title would head every field inside it
    assert "####" not in json.dumps(hover["contents"]), hover["contents"]

    completion = server.request("textDocument/completion",
                                {"textDocument": {"uri": uri}, "position": _position(SPEC, "switch: Q", 9)})
    items = completion["items"] if isinstance(completion, dict) else completion
    labels = {item["label"] for item in items}
    assert {"QM9700", "QM8700"} <= labels, sorted(labels)
