"""Stateful fake Docker Engine API (v1.43 subset) that lets the real opensandbox-server run without Docker.

It serves only what opensandbox-server 1.1.1 calls: version/info, image inspect/pull/commit/delete, volume create/inspect/delete,
containers create/start/stop/kill/pause/unpause/update/delete/inspect/list/logs and archive get/put.
Any other call answers a Docker-style 404 and is recorded in `FakeDocker.unhandled`.
Containers report IP 127.0.0.1. Optional `publish` serves a container port's published host port: an int relays it
to that 127.0.0.1 port like docker-proxy does; a :class:`PortService` serves an ASGI app of that container's own on
it (opened when the container starts, told of pauses, closed when it stops or is removed), so each container has
its own service.
"""

from __future__ import annotations

import asyncio
import base64
import calendar
import contextlib
import functools
import io
import json
import re
import secrets
import socket
import tarfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.server import ServerState

API_VERSION = "1.43"
CONTAINER_IP = "127.0.0.1"
_VERSION_PREFIX = re.compile(r"^/v\d+\.\d+(?=/)")
_TRUE = ("1", "true", "True")
_ZERO_TIME = "0001-01-01T00:00:00Z"
Handler = Callable[[Request], Awaitable[Response]]


class PortService(Protocol):
    """What serves one container port of every container that publishes it (see the module docstring)."""

    def open(self, container: dict[str, Any]) -> ASGIApp:
        """Return the app serving this container's port (called when the container starts)."""

    def pause(self, container: dict[str, Any], paused: bool) -> None:
        """Hear that the container was paused (True) or unpaused (False)."""

    def close(self, container: dict[str, Any]) -> None:
        """Forget the container's service (called when it stops or is removed)."""


Published = int | PortService


def _now() -> str:
    """Return the current UTC time in Docker's RFC 3339 nano format."""
    ns = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


def _err(status: int, message: str) -> JSONResponse:
    """Build a Docker-style error response."""
    return JSONResponse({"message": message}, status_code=status)


ContainerHandler = Callable[["FakeDocker", Request, dict[str, Any]], Awaitable[Response]]


def _container(handler: ContainerHandler) -> Callable[[FakeDocker, Request], Awaitable[Response]]:
    """Resolve the `{cid}` path parameter to a container, answering Docker's 404 when it is unknown."""

    @functools.wraps(handler)
    async def wrapper(self: FakeDocker, request: Request) -> Response:
        ctr = self._get(request.path_params["cid"])
        if ctr is None:
            return _err(404, f"No such container: {request.path_params['cid']}")
        return await handler(self, request, ctr)

    return wrapper


def _with_tag(ref: str, tag: str = "latest") -> str:
    """Return `ref` with an explicit tag."""
    return ref if ":" in ref.rsplit("/", 1)[-1] else f"{ref}:{tag}"


class FakeDocker:
    """Keep images and containers in memory and serve them over the Engine API."""

    def __init__(self, publish: Mapping[int, Published] | None = None) -> None:
        self.publish: dict[int, Published] = dict(publish or {})
        self.images: dict[str, dict[str, Any]] = {}
        self.containers: dict[str, dict[str, Any]] = {}
        self.volumes: dict[str, dict[str, Any]] = {}
        self.unhandled: list[str] = []
        self._relays: dict[str, list[asyncio.Server | _AppServer]] = {}
        self._services: dict[str, list[PortService]] = {}
        self._served: dict[str, list[tuple[int, int | ASGIApp]]] = {}
        c = "/containers/{cid}"
        routes: list[tuple[str, str, Handler]] = [
            ("GET", "/_ping", self.ping),
            ("GET", "/version", self.version),
            ("GET", "/info", self.info),
            ("POST", "/images/create", self.pull),
            ("GET", "/images/{name:path}/json", self.image_inspect),
            ("DELETE", "/images/{name:path}", self.image_delete),
            ("POST", "/commit", self.commit),
            ("POST", "/volumes/create", self.volume_create),
            ("GET", "/volumes/{name}", self.volume_inspect),
            ("DELETE", "/volumes/{name}", self.volume_delete),
            ("POST", "/containers/create", self.create),
            ("GET", "/containers/json", self.list),
            ("GET", c + "/json", self.inspect),
            ("GET", c + "/logs", self.logs),
            ("DELETE", c, self.delete),
            ("GET", c + "/archive", self.archive_get),
            ("PUT", c + "/archive", self.archive_put),
            ("POST", c + "/{action:str}", self.action),
        ]
        app = Starlette(routes=[Route(p, h, methods=[m]) for m, p, h in routes], lifespan=self._lifespan)
        app.add_route("/{rest:path}", self.fallback, methods=["GET", "POST", "PUT", "DELETE", "HEAD"])
        self._app = app

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ASGI, stripping the `/v1.xx` prefix the Docker client puts on paths."""
        if scope["type"] == "http":
            scope = dict(scope, path=_VERSION_PREFIX.sub("", scope["path"]))
        await self._app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Close the port relays when the server shuts down."""
        yield
        for cid in list(self._relays):
            self._close_relays(cid)
        for ctr in list(self.containers.values()):
            self._close_services(ctr)

    async def fallback(self, request: Request) -> Response:
        """Record a call this fake does not implement and answer 404."""
        self.unhandled.append(f"{request.method} {request.url.path}")
        return _err(404, f"page not found: {request.method} {request.url.path}")

    async def ping(self, request: Request) -> Response:
        """Answer the liveness probe."""
        return Response("OK", media_type="text/plain", headers={"Api-Version": API_VERSION})

    async def version(self, request: Request) -> Response:
        """Describe the fake engine version."""
        return JSONResponse(
            {"Version": "24.0.9", "ApiVersion": API_VERSION, "MinAPIVersion": "1.12", "Os": "linux", "Arch": "amd64"}
        )

    async def info(self, request: Request) -> Response:
        """Describe the fake daemon."""
        info = {"ID": "sandproof-fake", "OSType": "linux", "Architecture": "x86_64", "NCPU": 4}
        return JSONResponse({**info, "MemTotal": 8 << 30, "Containers": len(self.containers)})

    def _find_image(self, ref: str) -> dict[str, Any] | None:
        """Look an image up by tag, full id or bare hex id."""
        for image in self.images.values():
            if _with_tag(ref) in image["RepoTags"] or image["Id"] in (ref, f"sha256:{ref}"):
                return image
        return None

    def _add_image(self, ref: str) -> dict[str, Any]:
        """Register an image under `ref` unless it is known already."""
        image = self._find_image(ref)
        if image is None:
            image_id = "sha256:" + secrets.token_hex(32)
            image = {"Id": image_id, "RepoTags": [ref], "Os": "linux", "Architecture": "amd64", "Created": _now()}
            self.images[image_id] = image
        return image

    async def pull(self, request: Request) -> Response:
        """Pretend to pull an image and register it."""
        ref = _with_tag(request.query_params.get("fromImage", ""), request.query_params.get("tag") or "latest")
        self._add_image(ref)
        return JSONResponse({"status": f"Status: Downloaded newer image for {ref}"})

    async def image_inspect(self, request: Request) -> Response:
        """Inspect a known image."""
        image = self._find_image(request.path_params["name"])
        return JSONResponse(image) if image else _err(404, f"No such image: {request.path_params['name']}")

    async def image_delete(self, request: Request) -> Response:
        """Remove an image (a snapshot's, when the snapshot is deleted)."""
        image = self._find_image(request.path_params["name"])
        if image is None:
            return _err(404, f"No such image: {request.path_params['name']}")
        del self.images[image["Id"]]
        return JSONResponse([{"Untagged": tag} for tag in image["RepoTags"]] + [{"Deleted": image["Id"]}])

    async def commit(self, request: Request) -> Response:
        """Snapshot a container into a new image `repo:tag`."""
        q = request.query_params
        if self._get(q.get("container", "")) is None:
            return _err(404, f"No such container: {q.get('container')}")
        image = self._add_image(f"{q.get('repo')}:{q.get('tag') or 'latest'}")
        return JSONResponse({"Id": image["Id"]}, status_code=201)

    async def volume_create(self, request: Request) -> Response:
        """Create a named volume (the egress sidecar's runtime volume, a PVC created if missing)."""
        spec: dict[str, Any] = await request.json()
        name = str(spec.get("Name") or secrets.token_hex(16))
        volume = self.volumes.setdefault(
            name,
            {"Name": name, "Driver": "local", "Labels": spec.get("Labels") or {}, "Mountpoint": "", "Scope": "local"},
        )
        return JSONResponse(volume, status_code=201)

    async def volume_inspect(self, request: Request) -> Response:
        """Inspect a volume created here; any other is unknown."""
        volume = self.volumes.get(request.path_params["name"])
        return JSONResponse(volume) if volume else _err(404, f"get {request.path_params['name']}: no such volume")

    async def volume_delete(self, request: Request) -> Response:
        """Remove a volume created here."""
        if self.volumes.pop(request.path_params["name"], None) is None:
            return _err(404, f"get {request.path_params['name']}: no such volume")
        return Response(status_code=204)

    def _get(self, ref: str) -> dict[str, Any] | None:
        """Look a container up by id, id prefix or name."""
        for ctr in self.containers.values():
            if (ref and ctr["Id"].startswith(ref)) or ctr["Name"] == "/" + ref.lstrip("/"):
                return ctr
        return None

    async def create(self, request: Request) -> Response:
        """Create a container in state `created`."""
        spec: dict[str, Any] = await request.json()
        name = request.query_params.get("name") or secrets.token_hex(6)
        if self._get(name) is not None:
            return _err(409, f'Conflict. The container name "/{name}" is already in use.')
        image = self._find_image(spec.get("Image", ""))
        if image is None:
            return _err(404, f"No such image: {spec.get('Image')}")
        cid = secrets.token_hex(32)
        host_config = spec.get("HostConfig") or {}
        ports = {p: [dict(b) for b in bs] for p, bs in (host_config.get("PortBindings") or {}).items()}
        state = {"Status": "created", "Running": False, "Paused": False, "OOMKilled": False, "ExitCode": 0}
        state.update(Error="", StartedAt=_ZERO_TIME, FinishedAt=_ZERO_TIME)
        config = {key: spec.get(key) for key in ("Image", "Cmd", "Entrypoint", "Env", "Labels", "ExposedPorts")}
        config.update(Labels=spec.get("Labels") or {}, Env=spec.get("Env") or [], Tty=bool(spec.get("Tty")))
        net = {"IPAddress": CONTAINER_IP, "Gateway": CONTAINER_IP}
        ctr = {"Id": cid, "Name": f"/{name}", "Created": _now(), "Image": image["Id"], "State": state}
        ctr.update(Config=config, HostConfig=host_config, Mounts=[], RestartCount=0, Platform="linux")
        self.containers[cid] = ctr | {"NetworkSettings": {**net, "Ports": ports, "Networks": {"bridge": net}}}
        return JSONResponse({"Id": cid, "Warnings": []}, status_code=201)

    async def list(self, request: Request) -> Response:
        """List containers, honouring `all` and the label, name, status and id filters."""
        filters: dict[str, list[str]] = json.loads(request.query_params.get("filters") or "{}")
        rows = []
        for ctr in self.containers.values():
            labels, state = ctr["Config"]["Labels"], ctr["State"]
            checks = [
                request.query_params.get("all") in _TRUE or state["Running"],
                all(
                    labels.get(k) == v if v else k in labels
                    for k, _, v in (f.partition("=") for f in filters.get("label", []))
                ),
                all(n.lstrip("/") in ctr["Name"] for n in filters.get("name", [])),
                state["Status"] in filters.get("status", [state["Status"]]),
                any(ctr["Id"].startswith(i) for i in filters.get("id", [ctr["Id"]])),
            ]
            if all(checks):
                created = calendar.timegm(time.strptime(ctr["Created"][:19], "%Y-%m-%dT%H:%M:%S"))
                row = {"Id": ctr["Id"], "Names": [ctr["Name"]], "Image": ctr["Config"]["Image"], "Labels": labels}
                row.update(ImageID=ctr["Image"], Created=created, Ports=[])
                rows.append(row | {"State": state["Status"], "Status": state["Status"]})
        return JSONResponse(rows)

    @_container
    async def inspect(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Inspect one container."""
        return JSONResponse(ctr)

    @_container
    async def logs(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Return an empty log stream."""
        return Response(b"", media_type="application/vnd.docker.multiplexed-stream")

    @_container
    async def delete(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Remove a container (`force` removes running ones)."""
        if ctr["State"]["Running"] and request.query_params.get("force") not in _TRUE:
            return _err(409, "You cannot remove a running container. Stop the container before removing.")
        self._close_relays(ctr["Id"])
        self._close_services(ctr)
        del self.containers[ctr["Id"]]
        return Response(status_code=204)

    @_container
    async def action(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Start, stop, kill, pause, unpause or update a container."""
        act, st = request.path_params["action"], ctr["State"]
        if act == "start":
            if st["Running"]:
                return Response(status_code=304)
            st.update(Status="running", Running=True, Paused=False, Pid=4242, StartedAt=_now())
            await self._open_relays(ctr)
        elif act in ("stop", "kill"):
            if not st["Running"]:
                return (
                    _err(409, f"Container {ctr['Id']} is not running") if act == "kill" else Response(status_code=304)
                )
            st.update(Status="exited", Running=False, Paused=False, Pid=0, FinishedAt=_now(), ExitCode=137)
            self._close_relays(ctr["Id"])
            self._close_services(ctr)
        elif act in ("pause", "unpause"):
            if not st["Running"] or st["Paused"] == (act == "pause"):
                return _err(409, f"Container {ctr['Id']} is {'paused' if st['Paused'] else 'not paused/running'}")
            st.update(Status="paused" if act == "pause" else "running", Paused=act == "pause")
            for service in self._services.get(ctr["Id"], []):
                service.pause(ctr, act == "pause")
        elif act == "update":
            body = await request.json()
            ctr["Config"]["Labels"] = body.pop("Labels", ctr["Config"]["Labels"])
            ctr["HostConfig"].update(body)
            return JSONResponse({"Warnings": []})
        else:
            return await self.fallback(request)
        return Response(status_code=204)

    @_container
    async def archive_get(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Return a one-file tar for any path (the execd artefacts the server copies out of the image)."""
        name = request.query_params.get("path", "/").rstrip("/").rsplit("/", 1)[-1] or "root"
        payload, buf = b"#!/bin/sh\nexit 0\n", io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(payload), 0o755, int(time.time())
            tar.addfile(info, io.BytesIO(payload))
        stat = {"name": name, "size": len(payload), "mode": 0o755, "mtime": _now(), "linkTarget": ""}
        header = base64.b64encode(json.dumps(stat).encode()).decode()
        return Response(
            buf.getvalue(), media_type="application/x-tar", headers={"X-Docker-Container-Path-Stat": header}
        )

    @_container
    async def archive_put(self, request: Request, ctr: dict[str, Any]) -> Response:
        """Accept (and discard) a tar upload into a container."""
        await request.body()
        return Response(status_code=200)

    async def _open_relays(self, ctr: dict[str, Any]) -> None:
        """Serve each published host port whose container port is in `publish`: a relay, or the port's service.

        A service's app is made once per run of the container. Like docker-proxy, a published port keeps listening
        while the container is paused; a service hears of the pause (:meth:`PortService.pause`).
        """
        served = self._served.get(ctr["Id"])
        if served is None:
            served = self._served[ctr["Id"]] = []
            for spec, bindings in ctr["NetworkSettings"]["Ports"].items():
                target = self.publish.get(int(spec.split("/")[0]))
                if target is None:
                    continue
                app: int | ASGIApp = target if isinstance(target, int) else target.open(ctr)
                if not isinstance(target, int):
                    self._services.setdefault(ctr["Id"], []).append(target)
                served += [(int(binding["HostPort"]), app) for binding in bindings]
        for host_port, app in served:
            server: asyncio.Server | _AppServer
            if isinstance(app, int):
                server = await asyncio.start_server(_relay_to(app), "127.0.0.1", host_port)
            else:
                server = await _serve_asgi(app, host_port)
            self._relays.setdefault(ctr["Id"], []).append(server)

    def _close_relays(self, cid: str) -> None:
        """Stop listening on the published ports of a container."""
        for server in self._relays.pop(cid, []):
            server.close()

    def _close_services(self, ctr: dict[str, Any]) -> None:
        """Stop listening and tell the port services of a container that it is gone."""
        self._close_relays(ctr["Id"])
        self._served.pop(ctr["Id"], None)
        for service in self._services.pop(ctr["Id"], []):
            service.close(ctr)


class _AppServer:
    """An ASGI app served in the running loop; :meth:`close` also drops its open connections."""

    def __init__(self, server: asyncio.Server, state: ServerState) -> None:
        self.server = server
        self.state = state

    def close(self) -> None:
        """Stop listening and close every open connection (a kept-alive client sees the port go away)."""
        self.server.close()
        for connection in list(self.state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()


async def _serve_asgi(app: ASGIApp, port: int) -> _AppServer:
    """Serve `app` on 127.0.0.1:`port` in the running loop, with uvicorn's HTTP and WebSocket protocols."""
    config = uvicorn.Config(
        app, interface="asgi3", log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=300
    )
    config.load()
    state = ServerState()

    def protocol() -> asyncio.Protocol:
        made: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=state, app_state={}
        )
        return made

    server = await asyncio.get_running_loop().create_server(protocol, "127.0.0.1", port)
    return _AppServer(server, state)


def _relay_to(port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """Build a connection handler that pipes bytes to 127.0.0.1:`port` and back."""

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    return handle


class ThreadedServer:
    """Serve an ASGI app with uvicorn on a free 127.0.0.1 port in a background thread."""

    def __init__(self, app: ASGIApp) -> None:
        # IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on such sockets (else ~40 ms per keep-alive call).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, interface="asgi3", log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def url(self) -> str:
        """Return the base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> ThreadedServer:
        """Start serving and wait until uvicorn is ready."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("threaded uvicorn server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sock.close()
