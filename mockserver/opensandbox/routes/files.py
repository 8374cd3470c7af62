"""execd's file and directory routes: parse (query, JSON, multipart), call :mod:`..model.files`, render.

A runtime's real files (``fs.blocking``) are worked on in a worker thread, never on the event loop, and
downloads are streamed piece by piece (:mod:`mockserver.asgi.blocking`).

The handlers need no context (``None``: all they use is the sandbox the port gate admitted); :data:`ROWS`
lists them, bound as execd's other routes (one route per path, HEAD as GET).
"""

from __future__ import annotations

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.blocking import offload, piece_response
from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_json

from ..model import files
from .render import sandbox_of

__all__ = ["ROWS", "file_routes"]


async def _part(part: UploadFile | str) -> bytes:
    return await part.read() if isinstance(part, UploadFile) else part.encode()


async def upload(ctx: None, request: Request) -> Response:
    """Write the uploaded files: a ``metadata`` part, then a ``file`` part, for each (chunked or sized)."""
    fs = sandbox_of(request).fs
    if "multipart/form-data" not in request.headers.get("content-type", ""):
        raise files.invalid_file("expected a multipart/form-data body")
    try:
        form = await request.form(max_files=10_000, max_fields=10_000)
    except Exception as exc:
        raise files.invalid_file(f"malformed multipart body: {exc}") from exc
    try:
        metadata = [await _part(p) for p in form.getlist("metadata")]
        data = [await _part(p) for p in form.getlist("file")]
        await offload(fs.blocking, files.upload, fs, metadata, data)
    finally:
        await form.close()
    return Response(status_code=200)


async def download(ctx: None, request: Request) -> Response:
    """Return a file's bytes, whole, by byte ``Range`` or by lines."""
    q = request.query_params
    fs = sandbox_of(request).fs
    answer = await offload(
        fs.blocking, files.download, fs, q.get("path"), q.get("offset"), q.get("limit"), request.headers.get("range")
    )
    return piece_response(
        answer.pieces,
        blocking=fs.blocking,
        close=answer.close,
        status=answer.status,
        headers=answer.headers,
        media_type=answer.media_type,
    )


async def info(ctx: None, request: Request) -> Response:
    """Return ``{path: FileInfo}`` for each ``path``."""
    fs = sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.stat_paths, fs, request.query_params.getlist("path")))


async def search(ctx: None, request: Request) -> Response:
    """Return the files below ``path`` matching ``pattern``."""
    q, fs = request.query_params, sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.search, fs, q.get("path"), q.get("pattern")))


async def list_dir(ctx: None, request: Request) -> Response:
    """Return the entries below ``path`` down to ``depth``."""
    q, fs = request.query_params, sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.list_dir, fs, q.get("path"), q.get("depth")))


async def delete_files(ctx: None, request: Request) -> Response:
    """Delete files (missing ones are ignored)."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.delete_paths, fs, request.query_params.getlist("path"), recursive=False)
    return Response(status_code=200)


async def delete_dirs(ctx: None, request: Request) -> Response:
    """Delete directories recursively (missing ones are ignored)."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.delete_paths, fs, request.query_params.getlist("path"), recursive=True)
    return Response(status_code=200)


async def move(ctx: None, request: Request) -> Response:
    """Rename files."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.move, fs, await read_json(request, empty=None))
    return Response(status_code=200)


async def permissions(ctx: None, request: Request) -> Response:
    """Set mode, owner and group."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.permissions, fs, await read_json(request, empty=None))
    return Response(status_code=200)


async def replace(ctx: None, request: Request) -> Response:
    """Replace text in files; ``verbose=true`` answers the counts."""
    fs = sandbox_of(request).fs
    counts = await offload(fs.blocking, files.replace, fs, await read_json(request, empty=None))
    if request.query_params.get("verbose", "").lower() == "true":
        return JSONResponse(counts)
    return Response(status_code=200)


async def make_dirs(ctx: None, request: Request) -> Response:
    """Create directories with parents."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.make_dirs, fs, await read_json(request, empty=None))
    return Response(status_code=200)


#: The file and directory routes.
ROWS: list[Row[None]] = [
    Row("/files/upload", "POST", upload),
    Row("/files/download", "GET", download),
    Row("/files/info", "GET", info),
    Row("/files/search", "GET", search),
    Row("/files", "DELETE", delete_files),
    Row("/files/mv", "POST", move),
    Row("/files/permissions", "POST", permissions),
    Row("/files/replace", "POST", replace),
    Row("/directories/list", "GET", list_dir),
    Row("/directories", "POST", make_dirs),
    Row("/directories", "DELETE", delete_dirs),
]


def file_routes() -> list[BaseRoute]:
    """Return the file and directory routes of the sandbox the port gate admitted."""
    return bind(None, ROWS, per_method=False)
