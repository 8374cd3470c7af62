"""SDK flows to record: short, self-cleaning runs of each provider's real SDK, one cassette per flow.

Each flow makes its own sandbox and deletes it. The OpenSandbox flows of :data:`FLOWS` skip the SDK's execd
health check, so they run against any lifecycle server (the real opensandbox-server on a fake Docker API has
no execd); ``commands`` (:data:`EXTRA_FLOWS`) runs commands through execd and moves a file, so it is recorded
only when named (``--flow commands``). The TensorLake flows also run a command (an SSE stream) and move a file.

``python -m harness.recording.flows --provider P --out DIR [--upstream URL] [--api-key K] [--flow NAME]``
records each flow through a recording proxy into ``DIR/<flow>.jsonl``: in front of ``--upstream``, of the
real opensandbox-server 1.1.1 on the fake Docker API with ``--upstream real-opensandbox`` (how the fixtures
in ``tests/fixtures/cassettes/opensandbox-server-1.1.1`` are made), or of a fresh in-process mock of the
provider. The SDK matrix runs this in each SDK version's venv.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness.recording.proxy import recording
from mockserver.core import environment
from mockserver.core.environment import DEFAULT_API_KEY

__all__ = ["EXTRA_FLOWS", "FLOWS", "FlowOutcome", "record_flows", "run_flow"]

IMAGE = "python:3.11"
#: The ``--upstream`` value that boots the real opensandbox-server for the recording.
REAL_OPENSANDBOX = "real-opensandbox"


@dataclass(frozen=True)
class FlowOutcome:
    """How one flow ended: ``error`` is empty when the SDK did everything the flow asked."""

    provider: str
    name: str
    cassette: Path
    exchanges: int
    error: str = ""


# --- OpenSandbox ------------------------------------------------------------------------------------


def _osb_config(url: str, api_key: str | None, **options: Any) -> Any:
    """Return an SDK config for ``url``: every endpoint lookup on the wire (no cache), no metrics."""
    from opensandbox.config import ConnectionConfig

    kwargs: dict[str, Any] = {"domain": url.split("://", 1)[-1].rstrip("/"), "protocol": url.split("://", 1)[0]}
    if api_key:
        kwargs["api_key"] = api_key
    fields = getattr(ConnectionConfig, "model_fields", {})
    kwargs.update({k: True for k in ("endpoint_cache_disabled", "disable_metrics") if k in fields})
    return ConnectionConfig(**kwargs, **options)


async def _osb_sandbox(config: Any, **options: Any) -> Any:
    from opensandbox.sandbox import Sandbox

    return await Sandbox.create(
        IMAGE, connection_config=config, skip_health_check=True, timeout=timedelta(minutes=10), **options
    )


async def osb_create(config: Any) -> None:
    """Create a sandbox with metadata and resources, read it once, delete it."""
    sandbox = await _osb_sandbox(config, metadata={"flow": "create"}, resource={"cpu": "1", "memory": "1Gi"})
    await sandbox.get_info()
    await sandbox.kill()


async def osb_get(config: Any) -> None:
    """Read a sandbox through the instance and through the manager."""
    from opensandbox.manager import SandboxManager

    sandbox = await _osb_sandbox(config, metadata={"flow": "get"})
    await sandbox.get_info()
    manager = await SandboxManager.create(config)
    await manager.get_sandbox_info(sandbox.id)
    await sandbox.kill()


async def osb_list(config: Any) -> None:
    """List sandboxes filtered by metadata, then by state."""
    from opensandbox.manager import SandboxManager
    from opensandbox.models.sandboxes import SandboxFilter

    made = [await _osb_sandbox(config, metadata={"flow": "list", "n": str(i)}) for i in range(2)]
    manager = await SandboxManager.create(config)
    await manager.list_sandbox_infos(SandboxFilter(metadata={"flow": "list"}))
    await manager.list_sandbox_infos(SandboxFilter(states=["Running"], metadata={"flow": "list", "n": "1"}))
    for sandbox in made:
        await sandbox.kill()


async def osb_renew(config: Any) -> None:
    """Renew a sandbox's expiry and read it back."""
    sandbox = await _osb_sandbox(config, metadata={"flow": "renew"})
    await sandbox.renew(timedelta(minutes=30))
    await sandbox.get_info()
    await sandbox.kill()


async def osb_pause_resume(config: Any) -> None:
    """Pause a sandbox, read it, resume it (the SDK re-resolves its endpoints), read it."""
    from opensandbox.sandbox import Sandbox

    sandbox = await _osb_sandbox(config, metadata={"flow": "pause-resume"})
    await sandbox.pause()
    await sandbox.get_info()
    resumed = await Sandbox.resume(sandbox.id, connection_config=config, skip_health_check=True)
    await resumed.get_info()
    await resumed.kill()


async def osb_delete(config: Any) -> None:
    """Delete a sandbox, then ask for it and delete it again: both answer not found."""
    from opensandbox.exceptions import SandboxException
    from opensandbox.manager import SandboxManager

    sandbox = await _osb_sandbox(config, metadata={"flow": "delete"})
    await sandbox.kill()
    manager = await SandboxManager.create(config)
    for call in (manager.get_sandbox_info, manager.kill_sandbox):
        try:
            await call(sandbox.id)
        except SandboxException:
            continue
        raise AssertionError(f"{call.__name__} of a deleted sandbox did not fail")


async def osb_endpoints(config: Any) -> None:
    """Resolve execd, egress and a user port's endpoints, directly and through the server proxy."""
    from opensandbox.sandbox import Sandbox

    sandbox = await _osb_sandbox(config, metadata={"flow": "endpoints"})
    for port in (44772, 18080, 8080):
        await sandbox.get_endpoint(port)
    proxied = config.model_copy(update={"use_server_proxy": True})
    through = await Sandbox.connect(sandbox.id, connection_config=proxied, skip_health_check=True)
    await through.get_endpoint(8080)
    await sandbox.kill()


async def osb_commands(config: Any) -> None:
    """Run commands through execd (each an SSE stream), one of them failing and one in the background, and move a
    file in and out; then delete the sandbox. Needs a server whose sandboxes run execd (a sandproof mock)."""
    from opensandbox.models.execd import RunCommandOpts

    sandbox = await _osb_sandbox(config, metadata={"flow": "commands"})
    await sandbox.commands.run("echo hello world")
    await sandbox.commands.run("echo out; echo err >&2; exit 3")
    background = await sandbox.commands.run("echo started; sleep 1", opts=RunCommandOpts(background=True))
    if background.id:
        await sandbox.commands.get_command_status(background.id)
        await sandbox.commands.get_background_command_logs(background.id)
    await sandbox.files.write_file("/tmp/flow.txt", "alpha\nbeta")
    await sandbox.files.read_file("/tmp/flow.txt")
    await sandbox.kill()


OpenSandboxFlow = Callable[[Any], Awaitable[None]]
OPENSANDBOX_FLOWS: dict[str, OpenSandboxFlow] = {
    "create": osb_create,
    "get": osb_get,
    "list": osb_list,
    "renew": osb_renew,
    "pause-resume": osb_pause_resume,
    "delete": osb_delete,
    "endpoints": osb_endpoints,
}
#: Flows that need execd in the sandbox: recorded only when named (``--flow commands``), since the real
#: opensandbox-server on the fake Docker API has none.
OPENSANDBOX_EXECD_FLOWS: dict[str, OpenSandboxFlow] = {"commands": osb_commands}


def _run_opensandbox(name: str, url: str, api_key: str | None) -> None:
    flow = OPENSANDBOX_FLOWS.get(name) or OPENSANDBOX_EXECD_FLOWS[name]
    os.environ.setdefault("OPENSANDBOX_DISABLE_METRICS", "1")

    async def main() -> None:
        await flow(_osb_config(url, api_key))

    asyncio.run(main())


# --- TensorLake -------------------------------------------------------------------------------------


def tl_lifecycle(tl: dict[str, Any]) -> None:
    """Create a named sandbox, read and list it, suspend and resume it, terminate it."""
    from tensorlake.sandbox import Sandbox

    sandbox = Sandbox.create(**tl, name="flow-lifecycle", timeout_secs=600)
    sandbox.info()
    Sandbox.list(**tl)
    sandbox.suspend()
    sandbox.resume()
    sandbox.terminate()


def tl_commands(tl: dict[str, Any]) -> None:
    """Run commands (an SSE stream each) and move a file in and out, then terminate."""
    from tensorlake.sandbox import Sandbox

    sandbox = Sandbox.create(**tl)
    sandbox.run("echo", ["hello", "world"])
    sandbox.run("sh", ["-c", "echo out; echo err >&2; exit 3"])
    sandbox.write_file("/tmp/flow.txt", b"alpha\nbeta")
    sandbox.read_file("/tmp/flow.txt")
    sandbox.terminate()


TENSORLAKE_FLOWS: dict[str, Callable[[dict[str, Any]], None]] = {
    "lifecycle": tl_lifecycle,
    "commands": tl_commands,
}


def _run_tensorlake(name: str, url: str, api_key: str | None) -> None:
    with _environment(environment.sdk_env("tensorlake", url, api_key or DEFAULT_API_KEY)):
        TENSORLAKE_FLOWS[name]({"api_url": url, "api_key": api_key or DEFAULT_API_KEY})


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


FLOWS: dict[str, tuple[str, ...]] = {"opensandbox": tuple(OPENSANDBOX_FLOWS), "tensorlake": tuple(TENSORLAKE_FLOWS)}
#: Flows recorded only when asked for by name (they need a runtime behind the server).
EXTRA_FLOWS: dict[str, tuple[str, ...]] = {"opensandbox": tuple(OPENSANDBOX_EXECD_FLOWS), "tensorlake": ()}


def run_flow(provider: str, name: str, url: str, api_key: str | None) -> str:
    """Run one flow against ``url``; return '' or the error that stopped it."""
    runner = {"opensandbox": _run_opensandbox, "tensorlake": _run_tensorlake}[provider]
    try:
        runner(name, url, api_key)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def record_flows(
    provider: str, upstream: str, out: Path, *, api_key: str | None, names: Sequence[str] = (), note: str = ""
) -> list[FlowOutcome]:
    """Record each flow (all by default) through its own recording proxy into ``out/<flow>.jsonl``."""
    known = FLOWS[provider] + EXTRA_FLOWS[provider]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown {provider} flow(s) {unknown}; known: {list(known)}")
    outcomes = []
    for name in names or FLOWS[provider]:
        cassette = out / f"{name}.jsonl"
        with recording(upstream, cassette, provider=provider, note=note or f"{provider} SDK flow {name!r}") as (
            server,
            writer,
        ):
            error = run_flow(provider, name, server.url, api_key)
        outcomes.append(FlowOutcome(provider, name, cassette, writer.count, error))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Record the SDK flows; exit 1 when a flow failed."""
    parser = argparse.ArgumentParser(prog="python -m harness.recording.flows", description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=sorted(FLOWS), required=True)
    parser.add_argument("--out", type=Path, required=True, help="directory for the cassettes")
    parser.add_argument(
        "--upstream", help=f"record this server URL, or {REAL_OPENSANDBOX!r} (default: a fresh in-process mock)"
    )
    parser.add_argument("--api-key", default=DEFAULT_API_KEY, help="the key the SDK sends")
    parser.add_argument("--flow", action="append", default=[], help="record only this flow (repeatable)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.upstream == REAL_OPENSANDBOX:
        from harness.differential.real_server import RealOpenSandboxServer

        with RealOpenSandboxServer(api_key=args.api_key) as real:
            note = "the real opensandbox-server 1.1.1 (Docker runtime on sandproof's fake Docker Engine API)"
            outcomes = record_flows(args.provider, real.url, args.out, api_key=args.api_key, names=args.flow, note=note)
    else:
        from harness.recording.replay import serve_target

        with serve_target(args.upstream or "mock", args.provider, args.api_key) as upstream:
            outcomes = record_flows(args.provider, upstream, args.out, api_key=args.api_key, names=args.flow)
    for outcome in outcomes:
        status = f"FAILED {outcome.error}" if outcome.error else "ok"
        print(f"{outcome.provider} {outcome.name}: {outcome.exchanges} exchanges -> {outcome.cassette} [{status}]")
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
