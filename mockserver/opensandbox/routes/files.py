"""execd's file and directory routes: parse (query, JSON, multipart), call :mod:`..model.files`, render.

A runtime's real files (``fs.blocking``) are worked on in a worker thread, never on the event loop, and
downloads are streamed piece by piece (:mod:`mockserver.asgi.blocking`).
"""

from __future__ import annotations

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.blocking import offload, piece_response
from mockserver.asgi.requests import read_json

from ..model import files
from .render import sandbox_of

__all__ = ["file_routes"]


async def _part(part: UploadFile | str) -> bytes:
    return await part.read() if isinstance(part, UploadFile) else part.encode()


async def upload(request: Request) -> Response:
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


async def download(request: Request) -> Response:
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


async def info(request: Request) -> Response:
    """Return ``{path: FileInfo}`` for each ``path``."""
    fs = sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.stat_paths, fs, request.query_params.getlist("path")))


async def search(request: Request) -> Response:
    """Return the files below ``path`` matching ``pattern``."""
    q, fs = request.query_params, sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.search, fs, q.get("path"), q.get("pattern")))


async def list_dir(request: Request) -> Response:
    """Return the entries below ``path`` down to ``depth``."""
    q, fs = request.query_params, sandbox_of(request).fs
    return JSONResponse(await offload(fs.blocking, files.list_dir, fs, q.get("path"), q.get("depth")))


async def delete_files(request: Request) -> Response:
    """Delete files (missing ones are ignored)."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.delete_paths, fs, request.query_params.getlist("path"), recursive=False)
    return Response(status_code=200)


async def delete_dirs(request: Request) -> Response:
    """Delete directories recursively (missing ones are ignored)."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.delete_paths, fs, request.query_params.getlist("path"), recursive=True)
    return Response(status_code=200)


async def move(request: Request) -> Response:
    """Rename files."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.move, fs, await read_json(request, empty=None))
    return Response(status_code=200)


async def permissions(request: Request) -> Response:
    """Set mode, owner and group."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.permissions, fs, await read_json(request, empty=None))
    return Response(status_code=200)


async def replace(request: Request) -> Response:
    """Replace text in files; ``verbose=true`` answers the counts."""
    fs = sandbox_of(request).fs
    counts = await offload(fs.blocking, files.replace, fs, await read_json(request, empty=None))
    if request.query_params.get("verbose", "").lower() == "true":
        return JSONResponse(counts)
    return Response(status_code=200)


async def make_dirs(request: Request) -> Response:
    """Create directories with parents."""
    fs = sandbox_of(request).fs
    await offload(fs.blocking, files.make_dirs, fs, await read_json(request, empty=None))
    return Response(status_code=200)


def file_routes() -> list[BaseRoute]:
    """Return the file and directory routes of the sandbox the port gate admitted."""
    return [
        Route("/files/upload", upload, methods=["POST"]),
        Route("/files/download", download, methods=["GET"]),
        Route("/files/info", info, methods=["GET"]),
        Route("/files/search", search, methods=["GET"]),
        Route("/files", delete_files, methods=["DELETE"]),
        Route("/files/mv", move, methods=["POST"]),
        Route("/files/permissions", permissions, methods=["POST"]),
        Route("/files/replace", replace, methods=["POST"]),
        Route("/directories/list", list_dir, methods=["GET"]),
        Route("/directories", make_dirs, methods=["POST"]),
        Route("/directories", delete_dirs, methods=["DELETE"]),
    ]
