"""The host end of each sandbox's init socket, and the one I/O thread that reads them all.

:class:`Hub` runs a selector over every sandbox's SOCK_SEQPACKET socket in a single daemon thread: replies
complete the request waiting for them, other messages go to the sandbox's event callback (output and
exits, routed to :class:`~mockserver.linux.process.LinuxProcess`).

Sending never blocks: a message goes straight into the socket when it has room, else into the channel's
outgoing queue, which the I/O thread writes out as the socket drains. A sandbox whose init stops reading
(stopped by a debugger, frozen, busy) therefore never stalls the caller (the server's event loop); the
queue is bounded: while :data:`OUTBOX_LIMIT` bytes wait, :meth:`Channel.send` refuses bulk data
(:class:`ChannelFull`) while small control messages (signals, credits) still queue.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import selectors
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from .standalone.wire import BUFFER, CHUNK, MAX_MESSAGE, WireError, pack_request, unpack_event

__all__ = ["OUTBOX_LIMIT", "Channel", "ChannelClosed", "ChannelFull", "Hub"]

#: Bytes a channel queues for a sandbox whose init does not read, past which bulk data is refused.
OUTBOX_LIMIT = 4 * 1024 * 1024

EventHandler = Callable[[dict[str, Any], bytes], None]


class ChannelClosed(ConnectionError):
    """The sandbox's init is gone (the sandbox was destroyed or crashed)."""


class ChannelFull(BlockingIOError):
    """The sandbox's init has not read what was queued for it (:data:`OUTBOX_LIMIT`): bulk data is refused."""


class Channel:
    """One sandbox's socket: send requests, await replies, hand events to ``on_event``."""

    def __init__(self, sock: socket.socket, on_event: EventHandler, on_close: Callable[[], None]) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUFFER)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUFFER)
        sock.setblocking(False)
        self.sock = sock
        self.on_event = on_event
        self.on_close = on_close
        self.closed = False
        self.hub: Hub | None = None
        self._send_lock = threading.Lock()
        self._outbox: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    @property
    def queued(self) -> int:
        """Return how many bytes wait for the init to read them."""
        return self._queued

    def send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        """Send one message that has no reply, without blocking (a long payload goes as several messages).

        What the socket cannot take now is queued and written by the I/O thread. A message with a payload
        (stdin data) is refused whole with :class:`ChannelFull` while :data:`OUTBOX_LIMIT` bytes or more
        are queued already; control messages are always queued.
        """
        view = memoryview(payload)
        packets = [pack_request(header, bytes(view[i : i + CHUNK])) for i in range(0, len(view), CHUNK)]
        packets = packets or [pack_request(header)]
        with self._send_lock:
            if self.closed:
                raise ChannelClosed("the sandbox's init is gone")
            if payload and self._queued >= OUTBOX_LIMIT:
                raise ChannelFull(f"{self._queued} bytes wait for the sandbox's init to read them")
            sent = 0
            while not self._outbox and sent < len(packets):
                try:
                    self.sock.send(packets[sent])
                except BlockingIOError:
                    break
                except OSError as exc:
                    raise ChannelClosed(f"the sandbox's init is gone: {exc}") from exc
                sent += 1
            rest = packets[sent:]
            self._outbox.extend(rest)
            self._queued += sum(len(packet) for packet in rest)
        if rest and self.hub is not None:
            self.hub.want_write(self)

    def flush(self) -> bool:
        """Write queued messages while the socket takes them (I/O thread); tell whether the queue is empty."""
        with self._send_lock:
            while self._outbox and not self.closed:
                packet = self._outbox[0]
                try:
                    self.sock.send(packet)
                except BlockingIOError:
                    return False
                except OSError:
                    self._outbox.clear()
                    self._queued = 0
                    return True
                self._outbox.popleft()
                self._queued -= len(packet)
            return True

    def request(self, header: dict[str, Any]) -> Future[dict[str, Any]]:
        """Send a request and return the future of its reply."""
        future: Future[dict[str, Any]] = Future()
        req = next(self._ids)
        self._pending[req] = future
        try:
            self.send({**header, "req": req})
        except ChannelClosed as exc:
            self._pending.pop(req, None)
            future.set_exception(exc)
        return future

    def call(self, header: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        """Send a request and block for its reply."""
        return self.request(header).result(timeout)

    def deliver(self, packet: bytes) -> None:
        """Handle one packet read by the hub."""
        header, payload = unpack_event(packet)
        if header["op"] == "reply":
            future = self._pending.pop(int(header.get("req") or 0), None)
            if future is not None and not future.done():
                future.set_result(header)
            return
        self.on_event(header, payload)

    def fail(self) -> None:
        """Mark the channel closed and fail every waiting request."""
        with self._send_lock:
            if self.closed:
                return
            self.closed = True
            self._outbox.clear()
            self._queued = 0
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ChannelClosed("the sandbox's init is gone"))
        with contextlib.suppress(OSError):
            self.sock.close()
        self.on_close()


class Hub:
    """The runtime's I/O thread."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._adds: list[Channel] = []
        self._removes: list[Channel] = []
        self._writers: list[Channel] = []
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="sandproof-linux-io", daemon=True)
        self._thread.start()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def add(self, channel: Channel) -> None:
        """Start reading ``channel``."""
        channel.hub = self
        with self._lock:
            self._adds.append(channel)
        self._wake()

    def want_write(self, channel: Channel) -> None:
        """Write ``channel``'s queued messages as its socket drains."""
        with self._lock:
            self._writers.append(channel)
        self._wake()

    def remove(self, channel: Channel) -> None:
        """Stop reading ``channel`` and fail it."""
        with self._lock:
            self._removes.append(channel)
        self._wake()

    def _apply(self) -> None:
        with self._lock:
            adds, self._adds = self._adds, []
            removes, self._removes = self._removes, []
            writers, self._writers = self._writers, []
        for channel in adds:
            if not channel.closed:
                self._sel.register(channel.sock, selectors.EVENT_READ, channel)
        for channel in writers:
            if not channel.closed:
                with contextlib.suppress(KeyError, ValueError):
                    self._sel.modify(channel.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, channel)
        for channel in removes:
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(channel.sock)
            channel.fail()

    def _loop(self) -> None:
        while not self._stop:
            for key, mask in self._sel.select():
                channel = key.data
                if channel is None:
                    with contextlib.suppress(BlockingIOError):
                        self._wake_r.recv(4096)
                    self._apply()
                    continue
                assert isinstance(channel, Channel)
                if mask & selectors.EVENT_WRITE and channel.flush():
                    with contextlib.suppress(KeyError, ValueError):
                        self._sel.modify(channel.sock, selectors.EVENT_READ, channel)
                if not mask & selectors.EVENT_READ:
                    continue
                try:
                    packet = channel.sock.recv(MAX_MESSAGE)
                except BlockingIOError:
                    continue
                except OSError:
                    packet = b""
                if not packet:
                    with contextlib.suppress(KeyError, ValueError):
                        self._sel.unregister(channel.sock)
                    channel.fail()
                    continue
                try:
                    channel.deliver(packet)
                except WireError:
                    continue
                except Exception:  # a failing handler must not stop the I/O of every sandbox
                    continue

    def close(self) -> None:
        """Stop the thread (channels still registered are failed)."""
        self._stop = True
        self._wake()
        self._thread.join(timeout=2)
        for key in list(self._sel.get_map().values()):
            if isinstance(key.data, Channel):
                key.data.fail()
        self._sel.close()
        self._wake_r.close()
        self._wake_w.close()
