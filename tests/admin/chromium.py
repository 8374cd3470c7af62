"""A small driver for a real headless Chromium over the DevTools protocol (CDP), with ``websockets`` only.

``with Chromium() as browser:`` starts Debian's ``/usr/bin/chromium`` headless with a fresh profile and the
flags that keep it off the network, opens one page, and lets a test navigate, run JavaScript in the page,
wait for a condition and take a screenshot. Playwright is not needed, and no browser is ever downloaded.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM = Path(os.environ.get("SANDPROOF_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1440,1200",
)


class BrowserError(RuntimeError):
    """Raise when Chromium does not start, a command fails or a condition never holds."""


class Chromium:
    """One headless Chromium with one page, driven over CDP."""

    def __init__(self, binary: Path = CHROMIUM, *, start_timeout: float = 30.0) -> None:
        self.binary = binary
        self.start_timeout = start_timeout
        self._profile: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None
        self._session = ""
        self._ids = itertools.count(1)
        self.console: list[str] = []

    def __enter__(self) -> Chromium:
        self._profile = Path(tempfile.mkdtemp(prefix="sandproof-chromium-"))
        try:
            self._proc = subprocess.Popen(
                [str(self.binary), *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._ws = connect(self._browser_socket(), max_size=None, open_timeout=self.start_timeout)
            target = self._send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
            self._session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)[
                "sessionId"
            ]
            self._send("Page.enable")
            self._send("Runtime.enable")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
            self._proc = None
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def _browser_socket(self) -> str:
        """Wait for Chromium to write its DevTools port into the profile; return the browser's socket URL."""
        assert self._profile is not None and self._proc is not None
        marker = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrowserError(f"chromium exited with status {self._proc.returncode}")
            if marker.is_file():
                lines = marker.read_text().split()
                if len(lines) >= 2:
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        raise BrowserError(f"chromium wrote no DevTools port within {self.start_timeout:.0f}s")

    def _send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        """Send one CDP command and return its result (events that arrive meanwhile are kept or dropped)."""
        assert self._ws is not None
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv(timeout=60))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if reply.get("method") == "Runtime.consoleAPICalled":
                args = reply["params"].get("args", [])
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))
            elif reply.get("method") == "Runtime.exceptionThrown":
                details = reply["params"]["exceptionDetails"]
                self.console.append(f"uncaught: {details.get('exception', {}).get('description', details)}")

    def navigate(self, url: str) -> None:
        """Load ``url`` and wait until the document has loaded."""
        self._send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    def evaluate(self, expression: str) -> Any:
        """Run JavaScript in the page (promises awaited) and return its JSON value."""
        result = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(f"{expression!r} threw {details.get('exception', {}).get('description', details)}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        """Evaluate ``expression`` until it is truthy; return that value (BrowserError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout:.0f}s: {expression}; console: {self.console[-5:]}")
            time.sleep(0.1)

    def fill(self, selector: str, value: str) -> None:
        """Set a form field's value and fire ``input`` and ``change``, as typing and leaving the field does."""
        self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            f" e.value = {json.dumps(value)};"
            " e.dispatchEvent(new Event('input', {bubbles: true}));"
            " e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()"
        )

    def click(self, selector: str) -> None:
        """Click the first element matching ``selector`` (BrowserError when there is none)."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return false; e.scrollIntoView(); e.click(); return true; })()"
        )
        if not found:
            raise BrowserError(f"nothing to click at {selector}")

    def text(self, selector: str) -> str:
        """Return the text of the first element matching ``selector`` ('' when there is none)."""
        return str(
            self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{innerText: ''}}).innerText") or ""
        )

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the whole page to ``path``."""
        data = self._send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
