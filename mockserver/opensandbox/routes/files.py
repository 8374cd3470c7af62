"""execd's file and directory routes over the sandbox's in-memory filesystem.

``mode`` values travel as the decimal spelling of octal permissions (``755``), as execd does.
Download ``offset``/``limit`` are line based (1-based first line, line count); ``Range`` is bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_json
from mockserver.core import ApiError
from mockserver.sandbox.filesystem import FileInfo, FileSystem, FsError, normpath

from .models import SandboxRecord, iso

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
#: Where execd resolves an empty path (``filepath.Abs("")``): its working directory.
WORKDIR = "/"


def file_info(info: FileInfo) -> dict[str, Any]:
    """Return execd's ``FileInfo`` JSON."""
    stamp = iso(info.mtime)
    return {
        "path": info.path,
        "type": "directory" if info.is_dir else "file",
        "size": info.size,
        "modified_at": stamp,
        "created_at": stamp,
        "owner": info.owner,
        "group": info.group,
        "mode": int(oct(info.mode)[2:]),
    }


def parse_mode(value: Any, default: int) -> int:
    """Turn execd's decimal-spelled octal mode (``644``) into permission bits."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, "INVALID_FILE_METADATA", f"invalid mode: {value!r}")
    try:
        return int(str(value), 8)
    except ValueError:
        raise ApiError(400, "INVALID_FILE_METADATA", f"invalid mode: {value}") from None


def fs_error(exc: FsError, path: str) -> ApiError:
    """Map a filesystem error to execd's error body."""
    if exc.code == "not_found":
        return ApiError(404, "FILE_NOT_FOUND", f"file not found: {path}")
    return ApiError(500, "RUNTIME_ERROR", f"{path}: {exc.strerror.lower()}")


def _path(raw: str | None, name: str = "path") -> str:
    if not raw:
        raise ApiError(400, "MISSING_QUERY", f"missing query parameter: {name}")
    try:
        return normpath(raw, "/")
    except FsError as exc:  # a NUL byte: the kernel's EINVAL, which execd reports as a runtime error
        raise ApiError(500, "RUNTIME_ERROR", f"error accessing file {raw}: invalid argument") from exc


class FileRoutes:
    """Serve execd's filesystem API for the sandbox in the request scope."""

    def __init__(self, sandbox: Callable[[Request], SandboxRecord]) -> None:
        self.sandbox = sandbox

    def routes(self) -> list[BaseRoute]:
        """Return the file and directory routes."""
        return [
            Route("/files/upload", self.upload, methods=["POST"]),
            Route("/files/download", self.download, methods=["GET"]),
            Route("/files/info", self.info, methods=["GET"]),
            Route("/files/search", self.search, methods=["GET"]),
            Route("/files", self.delete_files, methods=["DELETE"]),
            Route("/files/mv", self.move, methods=["POST"]),
            Route("/files/permissions", self.permissions, methods=["POST"]),
            Route("/files/replace", self.replace, methods=["POST"]),
            Route("/directories/list", self.list_dir, methods=["GET"]),
            Route("/directories", self.make_dirs, methods=["POST"]),
            Route("/directories", self.delete_dirs, methods=["DELETE"]),
        ]

    def _fs(self, request: Request) -> FileSystem:
        return self.sandbox(request).fs

    async def upload(self, request: Request) -> Response:
        """Write the uploaded files: ``metadata`` then ``file`` part for each (chunked or sized)."""
        fs = self._fs(request)
        if "multipart/form-data" not in request.headers.get("content-type", ""):
            raise ApiError(400, "INVALID_FILE", "expected a multipart/form-data body")
        try:
            form = await request.form(max_files=10_000, max_fields=10_000)
        except Exception as exc:
            raise ApiError(400, "INVALID_FILE", f"malformed multipart body: {exc}") from exc
        try:
            metas = form.getlist("metadata")
            files = form.getlist("file")
            if not files or len(metas) != len(files):
                raise ApiError(400, "INVALID_FILE", "each file part needs one metadata part before it")
            for meta_part, file_part in zip(metas, files, strict=True):
                meta_raw = await meta_part.read() if isinstance(meta_part, UploadFile) else meta_part.encode()
                try:
                    meta = json.loads(meta_raw)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise ApiError(400, "INVALID_FILE_METADATA", f"invalid file metadata: {exc}") from exc
                if not isinstance(meta, dict) or not isinstance(meta.get("path"), str):
                    raise ApiError(400, "INVALID_FILE_METADATA", "file metadata needs a string path")
                data = await file_part.read() if isinstance(file_part, UploadFile) else file_part.encode()
                path = _path(meta["path"])
                mode = parse_mode(meta.get("mode"), 0o755)
                try:
                    if fs.is_file(path):
                        fs.write(path, data)
                        fs.chmod(path, mode)
                    else:
                        fs.write(path, data, mode=mode, parents=True)
                    if meta.get("owner") or meta.get("group"):
                        fs.chown(path, meta.get("owner") or None, meta.get("group") or None)
                except FsError as exc:
                    raise fs_error(exc, path) from exc
        finally:
            await form.close()
        return Response(status_code=200)

    async def download(self, request: Request) -> Response:
        """Return a file's bytes, whole, by byte ``Range`` (206) or by lines (``offset``/``limit``)."""
        fs = self._fs(request)
        path = _path(request.query_params.get("path"))
        try:
            data = fs.read(path)
        except FsError as exc:
            raise fs_error(exc, path) from exc
        headers = {"Content-Disposition": f'attachment; filename="{path.rsplit("/", 1)[-1]}"'}
        offset, limit = request.query_params.get("offset"), request.query_params.get("limit")
        if offset is not None or limit is not None:
            try:
                first = int(offset or "1")
                count = None if limit is None else int(limit)
            except ValueError:
                raise ApiError(400, "INVALID_REQUEST_BODY", "offset and limit must be integers") from None
            lines = data.splitlines(keepends=True)
            start = max(first, 1) - 1
            data = b"".join(lines[start : None if count is None else start + count])
        range_header = request.headers.get("range")
        if range_header:
            match = _RANGE.match(range_header.strip())
            size = len(data)
            if not match or (not match.group(1) and not match.group(2)):
                raise ApiError(416, "INVALID_REQUEST_BODY", f"invalid range: {range_header}")
            if match.group(1):
                start, end = int(match.group(1)), int(match.group(2) or size - 1)
            else:
                start, end = max(size - int(match.group(2)), 0), size - 1
            end = min(end, size - 1)
            if start >= size or start > end:
                return Response(status_code=416, headers={"Content-Range": f"bytes */{size}"}, media_type="text/plain")
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            return Response(data[start : end + 1], 206, headers, media_type="application/octet-stream")
        return Response(data, 200, headers, media_type="application/octet-stream")

    async def info(self, request: Request) -> Response:
        """Return ``{path: FileInfo}`` for each ``path``."""
        fs = self._fs(request)
        out: dict[str, Any] = {}
        for item in request.query_params.getlist("path"):  # no path at all: an empty map, as execd answers
            path = _path(item or WORKDIR)
            try:
                out[item] = file_info(fs.stat(path))
            except FsError as exc:
                raise fs_error(exc, path) from exc
        return JSONResponse(out)

    async def search(self, request: Request) -> Response:
        """Return the files below ``path`` whose name matches the glob ``pattern``."""
        fs = self._fs(request)
        path = _path(request.query_params.get("path"))
        pattern = request.query_params.get("pattern") or "*"
        try:
            found = fs.search(path, pattern)
        except FsError as exc:
            raise fs_error(exc, path) from exc
        return JSONResponse([file_info(i) for i in found if not i.is_dir])

    async def list_dir(self, request: Request) -> Response:
        """Return the entries below ``path`` down to ``depth`` levels (default 1)."""
        fs = self._fs(request)
        path = _path(request.query_params.get("path"))
        try:
            depth = int(request.query_params.get("depth") or "1")
        except ValueError:
            raise ApiError(400, "INVALID_REQUEST_BODY", "depth must be an integer") from None
        try:
            entries = fs.walk(path)[1:]
        except FsError as exc:
            raise fs_error(exc, path) from exc
        base = path.rstrip("/").count("/")
        return JSONResponse([file_info(e) for e in entries if e.path.count("/") - base <= max(depth, 1)])

    async def delete_files(self, request: Request) -> Response:
        """Delete files (missing ones are ignored)."""
        return self._delete(request, recursive=False)

    async def delete_dirs(self, request: Request) -> Response:
        """Delete directories recursively (missing ones are ignored)."""
        return self._delete(request, recursive=True)

    def _delete(self, request: Request, *, recursive: bool) -> Response:
        fs = self._fs(request)
        for item in request.query_params.getlist("path"):  # no path at all: nothing to do, 200
            if not item and recursive:
                continue  # execd's os.RemoveAll("") does nothing
            path = _path(item or WORKDIR)
            try:
                if not recursive and fs.is_dir(path):
                    raise ApiError(500, "RUNTIME_ERROR", f"{path}: is a directory")
                fs.remove(path, recursive=recursive)
            except FsError as exc:
                if exc.code != "not_found":
                    raise fs_error(exc, path) from exc
        return Response(status_code=200)

    async def _object(self, request: Request) -> Any:
        body = await read_json(request, empty=None)
        if body is None:
            raise ApiError(400, "INVALID_REQUEST_BODY", "request body is required")
        return body

    async def move(self, request: Request) -> Response:
        """Rename files: ``[{"src", "dest"}]``."""
        fs = self._fs(request)
        body = await self._object(request)
        if not isinstance(body, list):
            raise ApiError(400, "INVALID_REQUEST_BODY", "expected a list of {src, dest}")
        for item in body:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("src"), str)
                or not isinstance(item.get("dest"), str)
            ):
                raise ApiError(400, "INVALID_REQUEST_BODY", "each item needs string src and dest")
            src, dest = _path(item["src"], "src"), _path(item["dest"], "dest")
            try:
                fs.move(src, dest)
            except FsError as exc:
                raise fs_error(exc, src) from exc
        return Response(status_code=200)

    async def permissions(self, request: Request) -> Response:
        """Set mode, owner and group: ``{path: {"mode", "owner", "group"}}``."""
        fs = self._fs(request)
        body = await self._object(request)
        if not isinstance(body, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", "expected an object of path to permission")
        for raw, perm in body.items():
            if not isinstance(perm, dict):
                raise ApiError(400, "INVALID_REQUEST_BODY", f"invalid permission for {raw}")
            path = _path(raw)
            try:
                if perm.get("mode") is not None:
                    fs.chmod(path, parse_mode(perm["mode"], 0o755))
                if perm.get("owner") or perm.get("group"):
                    fs.chown(path, perm.get("owner") or None, perm.get("group") or None)
            except FsError as exc:
                # execd reports every chmod/chown failure, a missing file included, as a runtime error.
                message = f"error changing permissions for {raw}. {exc.strerror.lower()}"
                raise ApiError(500, "RUNTIME_ERROR", message) from exc
        return Response(status_code=200)

    async def replace(self, request: Request) -> Response:
        """Replace text in files: ``{path: {"old", "new"}}``; ``verbose`` reports counts."""
        fs = self._fs(request)
        body = await self._object(request)
        if not isinstance(body, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", "expected an object of path to replacement")
        counts: dict[str, Any] = {}
        for raw, item in body.items():
            if not isinstance(item, dict) or not isinstance(item.get("old"), str) or not item["old"]:
                raise ApiError(400, "INVALID_REQUEST_BODY", f"replacement for {raw} needs a non-empty old")
            if not isinstance(item.get("new"), str):
                raise ApiError(400, "INVALID_REQUEST_BODY", f"replacement for {raw} needs a string new")
            path = _path(raw)
            try:
                counts[raw] = {"replacedCount": fs.replace(path, item["old"], item["new"])}
            except FsError as exc:
                raise fs_error(exc, path) from exc
        if request.query_params.get("verbose", "").lower() == "true":
            return JSONResponse(counts)
        return Response(status_code=200)

    async def make_dirs(self, request: Request) -> Response:
        """Create directories with parents: ``{path: {"mode", "owner", "group"}}``."""
        fs = self._fs(request)
        body = await self._object(request)
        if not isinstance(body, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", "expected an object of path to permission")
        for raw, perm in body.items():
            perm = perm if isinstance(perm, dict) else {}
            path = _path(raw)
            try:
                fs.mkdir(path, parse_mode(perm.get("mode"), 0o755), parents=True)
                if perm.get("owner") or perm.get("group"):
                    fs.chown(path, perm.get("owner") or None, perm.get("group") or None)
            except FsError as exc:
                raise fs_error(exc, path) from exc
        return Response(status_code=200)
