"""execd's code contexts on the linux runtime: a Python interpreter (or a bash session) per context.

A ``python`` context is one ``python3`` process in the sandbox running the kernel of
:mod:`mockserver.linux.standalone.kernel`: cells go in on its stdin, their output comes out as it is
written, and the kernel's end-of-cell report (after a random marker, on both streams) gives the value of
the cell's last expression or its exception. A ``javascript`` context is the same with ``node`` running
:data:`JS_KERNEL` (cells share one global scope, top-level ``let`` included; a promise a cell ends with is
awaited; values are shown as ``util.inspect`` shows them); without ``node`` in the sandbox it fails to
create as execd does without a kernel. A ``bash`` context is a bash session
(:class:`~.linux_runtime.SessionState`): its variables and directory persist. The rules (bodies, refusals,
event shapes) are :mod:`.model.code`'s.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import secrets
import signal as signals
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.linux.launch import KERNEL_PATH
from mockserver.runtime import Output, Process
from mockserver.runtime.linux import LinuxBackend, SpawnError

from .linux_runtime import SessionRun, SessionState, session_argv, session_script
from .model import code as rules
from .model.execd import error_event
from .model.records import SandboxRecord

__all__ = ["JS_KERNEL", "CodeContexts"]

_HEX = "0123456789abcdef"

#: The javascript kernel, run as ``node -e JS_KERNEL <marker>``: the protocol of
#: :mod:`mockserver.linux.standalone.kernel` (a JSON line per cell on stdin; the marker and the report on both
#: streams at its end); SIGINT interrupts a running cell and is ignored between cells.
JS_KERNEL = r"""
const vm = require("vm"), fs = require("fs"), util = require("util");
const { StringDecoder } = require("string_decoder");
const marker = process.argv[1];
globalThis.require = require;
process.on("SIGINT", () => {});
const decoder = new StringDecoder("utf8");
let count = 0, pending = "", queue = Promise.resolve();
async function cell(code) {
  count += 1;
  let result = null, error = null;
  try {
    let value = new vm.Script(code, { filename: "<cell>" }).runInThisContext({ breakOnSigint: true, displayErrors: false });
    if (value && typeof value.then === "function") value = await value;
    if (value !== undefined) result = util.inspect(value);
  } catch (exc) {
    const e = exc instanceof Error ? exc : new Error(String(exc));
    error = { ename: e.name, evalue: e.message, traceback: String(e.stack || e).split("\n").filter((l) => !l.startsWith("    at ") || l.includes("<cell>")) };
  }
  const line = marker + JSON.stringify({ count, result, error }) + "\n";
  fs.writeSync(1, line);
  fs.writeSync(2, line);
}
process.stdin.on("data", (chunk) => {
  pending += decoder.write(chunk);
  let at;
  while ((at = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    if (line.trim()) {
      const code = JSON.parse(line).code;
      queue = queue.then(() => cell(code));
    }
  }
});
"""


@dataclass
class _Context:
    """A live context: its record, and its kernel (python) or session state (bash)."""

    context: rules.CodeContext
    kernel: Process | None = None
    marker: str = ""
    position: int = 0
    session: SessionState | None = None
    busy: bool = False
    running: Process | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class CodeContexts:
    """Every sandbox's code contexts."""

    def __init__(self, clock: VirtualClock, ids: IdFactory, backend: LinuxBackend[SandboxRecord]) -> None:
        self.clock = clock
        self.ids = ids
        self.backend = backend
        self._contexts: dict[str, dict[str, _Context]] = {}
        self._defaults: dict[tuple[str, str], str] = {}

    def _of(self, sb: SandboxRecord) -> dict[str, _Context]:
        return self._contexts.setdefault(sb.id, {})

    # -- contexts ----------------------------------------------------------------------------------

    async def create(self, sb: SandboxRecord, language: str, cwd: str | None) -> rules.CodeContext:
        """Make a context (starting its interpreter); the model's refusal for a language without a kernel."""
        if language not in rules.LANGUAGES:
            raise rules.create_failed("kernel not found")
        context = rules.CodeContext(self.ids.token(32, _HEX), language, cwd)
        live = _Context(context)
        if language in ("python", "javascript"):
            live.marker = "\x1e" + secrets.token_hex(8) + "\x1f"
            argv = ["python3", KERNEL_PATH] if language == "python" else ["node", "-e", JS_KERNEL]
            try:
                live.kernel = await self.backend.start(sb, [*argv, live.marker], cwd=cwd or "/", stdin=True)
            except SpawnError as exc:
                raise rules.create_failed("kernel not found" if language == "javascript" else exc.message) from exc
        else:
            live.session = SessionState(cwd or "/")
        self._of(sb)[context.id] = live
        return context

    def get(self, sb: SandboxRecord, context_id: str) -> rules.CodeContext:
        """Return a context; 404 ``CONTEXT_NOT_FOUND`` when there is none."""
        live = self._of(sb).get(context_id)
        if live is None:
            raise rules.context_not_found(context_id)
        return live.context

    def list(self, sb: SandboxRecord, language: str | None) -> list[rules.CodeContext]:
        """Return the contexts (of one language when given)."""
        return [c.context for c in self._of(sb).values() if language in (None, "", c.context.language)]

    def delete(self, sb: SandboxRecord, context_id: str) -> None:
        """End a context and its interpreter; 404 when there is none."""
        live = self._of(sb).pop(context_id, None)
        if live is None:
            raise rules.context_not_found(context_id)
        for key, value in list(self._defaults.items()):
            if value == context_id:
                del self._defaults[key]
        if live.kernel is not None:
            live.kernel.kill()

    def delete_language(self, sb: SandboxRecord, language: str) -> None:
        """End every context of ``language``."""
        for context in self.list(sb, language):
            self.delete(sb, context.id)

    def interrupt(self, sb: SandboxRecord, context_id: str) -> None:
        """Interrupt the cell running in a context (SIGINT); 500 when there is no such context."""
        live = self._of(sb).get(context_id)
        if live is None:
            raise ApiError(500, "RUNTIME_ERROR", "error interruptting code context. context not found")
        target = live.kernel if live.kernel is not None else live.running
        if target is not None:
            target.signal(signals.SIGINT)

    def clear(self) -> None:
        """Drop every context (the sandboxes are gone)."""
        self._contexts.clear()
        self._defaults.clear()

    def forget(self, sandbox_id: str) -> None:
        """Drop a gone sandbox's contexts (their processes died with it)."""
        self._contexts.pop(sandbox_id, None)
        for key in [k for k in self._defaults if k[0] == sandbox_id]:
            del self._defaults[key]

    # -- running -----------------------------------------------------------------------------------

    async def target(self, sb: SandboxRecord, run: rules.CodeRun) -> _Context:
        """Return the context a run goes to (the language's default one, made on first use); refuse as execd."""
        if run.context_id is None:
            language = run.language or "python"
            ident = self._defaults.get((sb.id, language))
            if ident is None or ident not in self._of(sb):
                try:
                    ident = (await self.create(sb, language, None)).id
                except ApiError as exc:
                    raise rules.run_failed("kernel not found") from exc
                self._defaults[(sb.id, language)] = ident
            return self._of(sb)[ident]
        live = self._of(sb).get(run.context_id)
        if live is None:
            raise rules.run_failed("context not found")
        if live.busy:
            raise rules.busy()
        return live

    async def start_run(self, sb: SandboxRecord, run: rules.CodeRun) -> AsyncIterator[dict[str, Any]]:
        """Refuse the run as execd does (see :meth:`target`), or return its events (see :meth:`run`)."""
        return self.run(sb, await self.target(sb, run), run.code)

    async def run(self, sb: SandboxRecord, live: _Context, code: str) -> AsyncIterator[dict[str, Any]]:
        """Run one cell in ``live``, yielding execd's events (``init`` first, ``execution_complete`` or ``error`` last)."""
        live.busy = True
        try:
            yield {"type": "init", "text": live.context.id, "timestamp": self.clock.now_ms()}
            started = time.monotonic()
            if live.kernel is not None:
                report = None
                async for item in self._python(live, code):
                    if isinstance(item, dict) and "count" in item:
                        report = item
                    else:
                        yield item
                if report is None:
                    yield _error("DeadKernelError", "the kernel died", self.clock.now_ms())
                    return
                if report.get("result") is not None:
                    yield {
                        "type": "execution_count",
                        "execution_count": report["count"],
                        "timestamp": self.clock.now_ms(),
                    }
                    yield {"type": "result", "results": {"text": report["result"]}, "timestamp": self.clock.now_ms()}
                error = report.get("error")
                if isinstance(error, dict):
                    yield _error(
                        str(error.get("ename")), str(error.get("evalue")), self.clock.now_ms(), error.get("traceback")
                    )
                    return
            else:
                code_exit = 0
                async for part in self._bash(sb, live, code):
                    if isinstance(part, int):
                        code_exit = part
                    else:
                        yield part
                if code_exit != 0:
                    yield error_event(str(code_exit), f"exit status {code_exit}", self.clock.now_ms())
                    return
            elapsed = round((time.monotonic() - started) * 1000)
            yield {"type": "execution_complete", "execution_time": elapsed, "timestamp": self.clock.now_ms()}
        finally:
            live.busy = False

    async def _python(self, live: _Context, code: str) -> AsyncIterator[dict[str, Any]]:
        kernel = live.kernel
        assert kernel is not None
        marker = live.marker.encode()
        if not kernel.write_stdin(json.dumps({"code": code}).encode() + b"\n"):
            return
        pending = {"stdout": b"", "stderr": b""}
        decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in pending}
        done: dict[str, dict[str, Any]] = {}
        async for event in kernel.events(live.position):
            live.position += 1
            if not isinstance(event, Output):
                return
            stream = event.stream
            if stream in done:
                continue
            buffer = pending[stream] + event.data
            at = buffer.find(marker)
            if at < 0:
                keep = len(marker) - 1
                send, pending[stream] = buffer[:-keep] if len(buffer) > keep else b"", buffer[-keep:]
                text = decoders[stream].decode(send)
            else:
                rest = buffer[at + len(marker) :]
                if b"\n" not in rest:
                    pending[stream] = buffer
                    continue
                line = rest.split(b"\n", 1)[0]
                text = decoders[stream].decode(buffer[:at], final=True)
                done[stream] = json.loads(line)
            if text:
                yield {"type": stream, "text": text, "timestamp": self.clock.now_ms()}
            if len(done) == 2:
                yield done["stdout"]
                return

    async def _bash(self, sb: SandboxRecord, live: _Context, code: str) -> AsyncIterator[dict[str, Any] | int]:
        state = live.session
        assert state is not None
        script = session_script(state, code, state.cwd)
        process = await self.backend.start(sb, session_argv(script), cwd="/")
        live.running = process
        marker = SessionRun(state)
        exit_code = 0
        partial = ""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        async for event in process.events():
            if not isinstance(event, Output):
                exit_code = event.shell_code
                break
            partial += decoder.decode(event.data)
            *lines, partial = partial.split("\n")
            out = [line + "\n" for line in lines if line and not marker.consume(line)]
            if out:
                yield {"type": "stdout", "text": "".join(out), "timestamp": self.clock.now_ms()}
        live.running = None
        marker.settle()
        if marker.exit_code is not None:
            exit_code = marker.exit_code
        yield exit_code


def _error(name: str, value: str, ts: int, traceback: Any = None) -> dict[str, Any]:
    lines = [str(x) for x in traceback] if isinstance(traceback, list) else [f"{name}: {value}"]
    return {"type": "error", "timestamp": ts, "error": {"ename": name, "evalue": value, "traceback": lines}}
