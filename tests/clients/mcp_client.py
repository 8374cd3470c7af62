"""A minimal MCP client over stdio (JSON-RPC 2.0, one message a line) for driving ``opensandbox-mcp`` in tests."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

#: The MCP protocol revision the client offers in ``initialize``.
PROTOCOL_VERSION = "2025-06-18"


class McpError(Exception):
    """A JSON-RPC error answer, or no answer in time."""


class StdioMcpClient:
    """Start an MCP server process and exchange JSON-RPC requests with it over its stdin and stdout."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], timeout: float = 60) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.next_id = 0
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.messages.put(message)
        self.messages.put(None)

    def _send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a request and return its result (raise :class:`McpError` on an error answer or none in time)."""
        self.next_id += 1
        ident = self.next_id
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": dict(params or {})})
        while True:
            try:
                message = self.messages.get(timeout=self.timeout)
            except queue.Empty:
                raise McpError(f"no answer to {method} in {self.timeout}s") from None
            if message is None:
                raise McpError(f"the server exited before answering {method}: {self.stderr_tail()}")
            if message.get("id") != ident:
                continue  # a notification or a server request: not ours
            if "error" in message:
                raise McpError(json.dumps(message["error"]))
            return message.get("result")

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer)."""
        self._send({"jsonrpc": "2.0", "method": method, "params": dict(params or {})})

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Call a tool; return ``{"error": bool, "value": structured content or the text content}``."""
        result = self.request("tools/call", {"name": name, "arguments": dict(arguments)})
        value = result.get("structuredContent")
        if value is None:
            texts = [c.get("text", "") for c in result.get("content", []) if c.get("type") == "text"]
            value = "\n".join(texts)
        return {"error": bool(result.get("isError")), "value": value}

    def stderr_tail(self) -> str:
        """Return the end of what the server wrote to stderr (once it has exited)."""
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read()[-2000:]

    def close(self) -> None:
        """Close the server's stdin (the stdio transport's end) and wait for it; kill it if it lingers."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
