"""A large tensor in parts on the bulk port, one connection each, read side by side.

One TCP connection between hosts is processed on one core at a time by each end's kernel:
a 64 MB tensor over two connections arrives in about half the time of one on a machine
with spare cores. The sender decides how many parts (``count``: what the receiver offered,
at most one per ``PART_BYTES``) and where each one starts (``bounds``, page aligned, the
same on both ends). It keeps the tensor's content under a transfer id (``Transfers``) until
every part has left; the receiver asks for parts 1.. on other connections (the requests sent
at once, the answers each read by a ``PartReader`` thread, blocked in the kernel without
the GIL) while part 0 follows the header on the first one. A part's connection that the task refused (``refused``) leaves that part to
the first connection, asked after part 0.

State: ``Transfers`` maps a transfer id (64 random bits) to its ``_Held`` (content, parts,
parts left, deadline, owner); an id is gone once its last part left, one of its sends
failed, its owner (the connection that asked for the tensor) closed (``drop_owned``: the
receiver gave up), or its deadline (``HOLD_S``) passed (swept at the next ``publish``).
"""
from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from typing import Callable

PART_BYTES = 4 << 20        # a tensor under twice this travels whole
OFFERED = 2                 # the parts a receiver takes at most
HOLD_S = 60.0               # a transfer's parts are asked for within this
_ALIGN = 4096


def count(nbytes: int, offered: int) -> int:
    """How many parts a tensor of ``nbytes`` leaves in, for a receiver that offered
    ``offered`` (1: whole)."""
    return max(1, min(offered, nbytes // PART_BYTES, 255))


def bounds(nbytes: int, parts: int, index: int) -> tuple[int, int]:
    """``(start, end)`` of part ``index`` of ``parts`` of ``nbytes`` (page-aligned starts)."""
    def start(i: int) -> int:
        return nbytes if i >= parts else (nbytes * i // parts) // _ALIGN * _ALIGN
    return start(index), start(index + 1)


@dataclasses.dataclass
class _Held:
    content: memoryview
    parts: int
    left: int           # parts not sent yet
    deadline: float
    owner: object       # the connection that asked for the tensor


class Transfers:
    """The content of tensors being sent in parts, by transfer id (module docstring)."""

    def __init__(self) -> None:
        self._held: dict[int, _Held] = {}
        self._lock = threading.Lock()
        self.parts_sent = 0     # parts that left, all transfers together

    def publish(self, content: memoryview, parts: int, owner: object) -> int:
        """Hold ``content`` for its ``parts`` sends, asked for by ``owner``; its new
        transfer id."""
        now = time.monotonic()
        transfer = int.from_bytes(os.urandom(8), "big")
        with self._lock:
            self._forget(lambda held: held.deadline < now)
            self._held[transfer] = _Held(content, parts, parts, now + HOLD_S, owner)
        return transfer

    def part(self, transfer: int, index: int) -> memoryview | None:
        """The bytes of part ``index`` (None: no such transfer or part any more)."""
        with self._lock:
            held = self._held.get(transfer)
        if held is None or not 0 <= index < held.parts:
            return None
        start, end = bounds(len(held.content), held.parts, index)
        return held.content[start:end]

    def sent(self, transfer: int, ok: bool) -> None:
        """One part of ``transfer`` left (``ok``) or failed to (the transfer is dropped)."""
        with self._lock:
            self.parts_sent += ok
            held = self._held.get(transfer)
            if held is None:
                return
            held.left -= 1
            if held.left <= 0 or not ok:
                del self._held[transfer]

    def drop_owned(self, owner: object) -> None:
        """Forget the transfers ``owner`` asked for (its connection closed)."""
        with self._lock:
            self._forget(lambda held: held.owner is owner)

    def held(self) -> int:
        """How many transfers are held."""
        with self._lock:
            return len(self._held)

    def _forget(self, which: Callable[[_Held], bool]) -> None:
        for transfer in [t for t, held in self._held.items() if which(held)]:
            del self._held[transfer]


class PartReader:
    """The answer to a part's request, already sent on ``sock``, read into ``view`` on a
    thread of its own (``read(sock, view)``); ``sock`` None: the task took no request for
    it (``refused`` at once). ``release(sock, ok)`` then keeps or closes the connection.
    After ``join``: ``error`` (an exception, or None) and ``refused`` (the task closed the
    connection unanswered, one of ``refusals``: read the part on another connection)."""

    def __init__(self, view: memoryview, sock: socket.socket | None,
                 read: Callable[[socket.socket, memoryview], None],
                 release: Callable[[socket.socket, bool], None],
                 refusals: tuple[type[BaseException], ...]) -> None:
        self.view = view
        self.error: BaseException | None = None
        self.refused = sock is None
        self._sock, self._read, self._release = sock, read, release
        self._refusals = refusals
        self._thread: threading.Thread | None = None
        if sock is not None:
            self._thread = threading.Thread(target=self._run, name="tfteach-bulk-part",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        assert self._sock is not None
        try:
            self._read(self._sock, self.view)
        except self._refusals:
            self.refused = True
        except BaseException as err:  # noqa: BLE001 - reported to the reader's caller
            self.error = err
        finally:
            self._release(self._sock, self.error is None and not self.refused)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def cancel(self) -> None:
        """End the part's wait at once (the transfer failed elsewhere)."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
