"""execd's file and directory rules over a sandbox's in-memory filesystem.

``mode`` values travel as the decimal spelling of octal permissions (``755``), as execd does.
Download ``offset``/``limit`` are line based (1-based first line, line count); ``Range`` is bytes.

Known deviations: with the emulator a sandbox's files live in the mock's memory and hold at most 16 MiB of
content (``FileSystem`` quota), whatever the container's disk; a write beyond it fails as a full disk does
(500 ``RUNTIME_ERROR`` "<path>: no space left on device") and writes nothing.

A path of 4096 bytes or more, or with a name over 255 bytes, fails as the kernel's ENAMETOOLONG does in real
execd, which reports every OS error but a missing file alike: 500 ``RUNTIME_ERROR`` "... file name too long",
on every route (``DELETE /files`` and ``DELETE /directories`` document no 400), and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockserver.core import ApiError
from mockserver.core.jsontext import parse_json
from mockserver.sandbox.filesystem import FileInfo, FileStream, FileSystem, FsError, normpath

from .spec import iso

__all__ = [
    "DEVIATING_OPERATIONS",
    "WORKDIR",
    "Download",
    "delete_paths",
    "download",
    "file_info",
    "fs_error",
    "invalid_file",
    "list_dir",
    "make_dirs",
    "move",
    "parse_mode",
    "permissions",
    "replace",
    "search",
    "stat_paths",
    "upload",
]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {"execd": ("POST /files/upload", "POST /files/replace")}

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
    if exc.code == "name_too_long":
        return name_too_long(path)
    if exc.code == "not_regular":  # a FIFO, socket or device: refused, never opened for I/O (choice)
        return ApiError(400, "INVALID_FILE", f"{path}: not a regular file")
    return ApiError(500, "RUNTIME_ERROR", f"{path}: {exc.strerror.lower()}")


def name_too_long(path: str) -> ApiError:
    """Return execd's answer to a path the kernel refuses with ENAMETOOLONG: 500 ``RUNTIME_ERROR``, as for
    any OS error but a missing file."""
    shown = path if len(path) <= 128 else f"{path[:128]}..."
    return ApiError(500, "RUNTIME_ERROR", f"error accessing file {shown}: file name too long")


def invalid_file(message: str) -> ApiError:
    """Return execd's 400 ``INVALID_FILE`` (an upload that is not a well-formed multipart body)."""
    return ApiError(400, "INVALID_FILE", message)


def _path(raw: str | None, name: str = "path") -> str:
    if not raw:
        raise ApiError(400, "MISSING_QUERY", f"missing query parameter: {name}")
    try:
        return normpath(raw, "/")
    except FsError as exc:  # a NUL byte: the kernel's EINVAL, which execd reports as a runtime error
        if exc.code == "name_too_long":
            raise name_too_long(raw) from exc
        raise ApiError(500, "RUNTIME_ERROR", f"error accessing file {raw}: invalid argument") from exc


def _chown(fs: FileSystem, path: str, spec: dict[str, Any]) -> None:
    if spec.get("owner") or spec.get("group"):
        fs.chown(path, spec.get("owner") or None, spec.get("group") or None)


def upload(fs: FileSystem, metadata: Sequence[bytes], files: Sequence[bytes]) -> None:
    """Write uploaded files: the n-th JSON ``metadata`` part describes the n-th ``file`` part."""
    if not files or len(metadata) != len(files):
        raise invalid_file("each file part needs one metadata part before it")
    for meta_raw, data in zip(metadata, files, strict=True):
        try:
            meta = parse_json(meta_raw)
        except ValueError as exc:  # malformed, not UTF-8, a lone surrogate, NaN
            raise ApiError(400, "INVALID_FILE_METADATA", f"invalid file metadata: {exc}") from exc
        if not isinstance(meta, dict) or not isinstance(meta.get("path"), str):
            raise ApiError(400, "INVALID_FILE_METADATA", "file metadata needs a string path")
        path = _path(meta["path"])
        mode = parse_mode(meta.get("mode"), 0o755)
        try:
            if fs.is_file(path):
                fs.write(path, data)
                fs.chmod(path, mode)
            else:
                fs.write(path, data, mode=mode, parents=True)
            _chown(fs, path, meta)
        except FsError as exc:
            raise fs_error(exc, path) from exc


@dataclass
class Download:
    """A download answer: status (200, 206 or 416), the body as pieces, the headers and the open file.

    The pieces are read from ``stream`` as they are sent (a large file is never held whole); whoever sends
    them calls :meth:`close` at the end.
    """

    status: int
    pieces: Iterator[bytes]
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/octet-stream"
    stream: FileStream | None = None

    def body(self) -> bytes:
        """Return the whole body (for small answers and tests) and close the file."""
        try:
            return b"".join(self.pieces)
        finally:
            self.close()

    def close(self) -> None:
        """Release the open file, if any."""
        if self.stream is not None:
            self.stream.close()


def _lines(pieces: Iterable[bytes], first: int, count: int | None) -> Iterator[bytes]:
    """Yield the bytes of lines ``first`` (0-based) to ``first + count`` of the pieces, as they come."""
    line = 0
    for piece in pieces:
        start = 0
        while start < len(piece) and (count is None or line < first + count):
            end = piece.find(b"\n", start)
            stop = len(piece) if end < 0 else end + 1
            if line >= first:
                yield piece[start:stop]
            if end >= 0:
                line += 1
            start = stop
        if count is not None and line >= first + count:
            return


def _slice(pieces: Iterable[bytes], start: int, end: int) -> Iterator[bytes]:
    """Yield bytes ``start`` to ``end`` (exclusive) of the pieces."""
    offset = 0
    for piece in pieces:
        low, high = max(start - offset, 0), min(end - offset, len(piece))
        if low < high:
            yield piece[low:high]
        offset += len(piece)
        if offset >= end:
            return


def download(
    fs: FileSystem, raw_path: str | None, offset: str | None, limit: str | None, range_header: str | None
) -> Download:
    """Return a file's bytes, whole, by byte ``Range`` (206) or by lines (``offset``/``limit``), streamed."""
    path = _path(raw_path)
    try:
        stream = fs.open_stream(path)
    except FsError as exc:
        raise fs_error(exc, path) from exc
    try:
        return _download(stream, path, offset, limit, range_header)
    except BaseException:
        stream.close()
        raise


def _download(
    stream: FileStream, path: str, offset: str | None, limit: str | None, range_header: str | None
) -> Download:
    headers = {"Content-Disposition": f'attachment; filename="{path.rsplit("/", 1)[-1]}"'}
    size = stream.size

    def source() -> Iterator[bytes]:
        return stream.chunks()

    if offset is not None or limit is not None:
        try:
            first = int(offset or "1")
            count = None if limit is None else int(limit)
        except ValueError:
            raise ApiError(400, "INVALID_REQUEST_BODY", "offset and limit must be integers") from None
        start_line = max(first, 1) - 1

        def source() -> Iterator[bytes]:
            return _lines(stream.chunks(), start_line, count)

        if not range_header:
            return Download(200, source(), headers, stream=stream)
        size = sum(len(piece) for piece in source())
    if not range_header:
        return Download(200, source(), {**headers, "Content-Length": str(size)}, stream=stream)
    match = _RANGE.match(range_header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        raise ApiError(416, "INVALID_REQUEST_BODY", f"invalid range: {range_header}")
    if match.group(1):
        start, end = int(match.group(1)), int(match.group(2) or size - 1)
    else:
        start, end = max(size - int(match.group(2)), 0), size - 1
    end = min(end, size - 1)
    if start >= size or start > end:
        stream.close()
        return Download(416, iter(()), {"Content-Range": f"bytes */{size}"}, "text/plain")
    headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    headers["Content-Length"] = str(end - start + 1)
    return Download(206, _slice(source(), start, end + 1), headers, stream=stream)


def stat_paths(fs: FileSystem, paths: Sequence[str]) -> dict[str, Any]:
    """Return ``{path: FileInfo}`` for each path (no path at all: an empty map, as execd answers)."""
    out: dict[str, Any] = {}
    for item in paths:
        path = _path(item or WORKDIR)
        try:
            out[item] = file_info(fs.stat(path))
        except FsError as exc:
            raise fs_error(exc, path) from exc
    return out


def search(fs: FileSystem, raw_path: str | None, pattern: str | None) -> list[dict[str, Any]]:
    """Return the files below ``path`` whose name matches the glob ``pattern`` (default ``*``)."""
    path = _path(raw_path)
    try:
        found = fs.search(path, pattern or "*")
    except FsError as exc:
        raise fs_error(exc, path) from exc
    return [file_info(i) for i in found if not i.is_dir]


def list_dir(fs: FileSystem, raw_path: str | None, raw_depth: str | None) -> list[dict[str, Any]]:
    """Return the entries below ``path`` down to ``depth`` levels (default 1)."""
    path = _path(raw_path)
    try:
        depth = int(raw_depth or "1")
    except ValueError:
        raise ApiError(400, "INVALID_REQUEST_BODY", "depth must be an integer") from None
    try:
        entries = fs.walk(path)[1:]
    except FsError as exc:
        raise fs_error(exc, path) from exc
    base = path.rstrip("/").count("/")
    return [file_info(e) for e in entries if e.path.count("/") - base <= max(depth, 1)]


def delete_paths(fs: FileSystem, paths: Sequence[str], *, recursive: bool) -> None:
    """Delete files (or directories, recursively); missing ones are ignored, no path at all does nothing."""
    for item in paths:
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


def _required(body: Any) -> Any:
    if body is None:
        raise ApiError(400, "INVALID_REQUEST_BODY", "request body is required")
    return body


def _path_map(body: Any, what: str) -> dict[str, Any]:
    body = _required(body)
    if not isinstance(body, dict):
        raise ApiError(400, "INVALID_REQUEST_BODY", f"expected an object of path to {what}")
    return body


def move(fs: FileSystem, body: Any) -> None:
    """Rename files: ``[{"src", "dest"}]``."""
    body = _required(body)
    if not isinstance(body, list):
        raise ApiError(400, "INVALID_REQUEST_BODY", "expected a list of {src, dest}")
    for item in body:
        if not isinstance(item, dict) or not isinstance(item.get("src"), str) or not isinstance(item.get("dest"), str):
            raise ApiError(400, "INVALID_REQUEST_BODY", "each item needs string src and dest")
        src, dest = _path(item["src"], "src"), _path(item["dest"], "dest")
        try:
            fs.move(src, dest)
        except FsError as exc:
            raise fs_error(exc, src) from exc


def permissions(fs: FileSystem, body: Any) -> None:
    """Set mode, owner and group: ``{path: {"mode", "owner", "group"}}``."""
    for raw, perm in _path_map(body, "permission").items():
        if not isinstance(perm, dict):
            raise ApiError(400, "INVALID_REQUEST_BODY", f"invalid permission for {raw}")
        path = _path(raw)
        try:
            if perm.get("mode") is not None:
                fs.chmod(path, parse_mode(perm["mode"], 0o755))
            _chown(fs, path, perm)
        except FsError as exc:
            # execd reports every chmod/chown failure, a missing file included, as a runtime error.
            message = f"error changing permissions for {raw}. {exc.strerror.lower()}"
            raise ApiError(500, "RUNTIME_ERROR", message) from exc


def replace(fs: FileSystem, body: Any) -> dict[str, Any]:
    """Replace text in files: ``{path: {"old", "new"}}``; return ``{path: {"replacedCount"}}``."""
    counts: dict[str, Any] = {}
    for raw, item in _path_map(body, "replacement").items():
        if not isinstance(item, dict) or not isinstance(item.get("old"), str) or not item["old"]:
            raise ApiError(400, "INVALID_REQUEST_BODY", f"replacement for {raw} needs a non-empty old")
        if not isinstance(item.get("new"), str):
            raise ApiError(400, "INVALID_REQUEST_BODY", f"replacement for {raw} needs a string new")
        path = _path(raw)
        try:
            counts[raw] = {"replacedCount": fs.replace(path, item["old"], item["new"])}
        except FsError as exc:
            raise fs_error(exc, path) from exc
    return counts


def make_dirs(fs: FileSystem, body: Any) -> None:
    """Create directories with parents: ``{path: {"mode", "owner", "group"}}``."""
    for raw, perm in _path_map(body, "permission").items():
        spec = perm if isinstance(perm, dict) else {}
        path = _path(raw)
        try:
            fs.mkdir(path, parse_mode(spec.get("mode"), 0o755), parents=True)
            _chown(fs, path, spec)
        except FsError as exc:
            raise fs_error(exc, path) from exc
