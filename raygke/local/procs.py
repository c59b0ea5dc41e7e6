"""Process and socket facts from ``/proc`` for the local Ray environment (Linux): a process's
start time (so a recycled pid is never taken for a node), its session's members, whether a port
is free, which sockets a set of processes listen on; and a block that holds Ctrl-C until it
ends (:func:`interrupts_deferred`). Standard library only.

Sources: proc(5) (``/proc/<pid>/stat`` field 22 ``starttime``, ``/proc/net/tcp`` columns,
``/proc/<pid>/fd`` socket inodes), https://man7.org/linux/man-pages/man5/proc.5.html.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LOCALHOST = "127.0.0.1"


def proc_start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22).

    None when the process does not exist or is a zombie (exited, not yet reaped).
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def is_alive(pid: int, start_ticks: int | None) -> bool:
    """True when ``pid`` runs and is the same process that was recorded (start time matches)."""
    now = proc_start_ticks(pid)
    return now is not None and (start_ticks is None or now == start_ticks)


def session_pids(sids: Iterable[int]) -> list[int]:
    """Live (non-zombie) pids whose session id is one of ``sids``, excluding this process."""
    wanted = set(sids)
    found = []
    if not wanted:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == os.getpid():
            continue
        try:
            if os.getsid(pid) in wanted and proc_start_ticks(pid) is not None:
                found.append(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return found


def port_in_use(port: int) -> bool:
    """True when ``port`` cannot be bound on 127.0.0.1 or on all interfaces (TCP)."""
    for host in (LOCALHOST, "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # Like the servers that will bind it: connections of a stopped cluster lingering in
            # TIME-WAIT do not make the port "in use".
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return True
    return False


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now (chosen by the kernel)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCALHOST, 0))
        return int(s.getsockname()[1])


def cluster_ports(folder: Path, gcs: int | None, dashboard: int | None) -> tuple[int, int]:
    """The GCS and dashboard ports of the cluster in ``folder``: the stack file's
    (``local.gcs_port`` / ``local.dashboard_port``) where set, else the ones its ``state.json``
    recorded (the cluster that is up), else free ports the kernel picks (:func:`free_port`),
    so that two checkouts' clusters run side by side."""
    try:
        recorded = json.loads((folder / "state.json").read_text())
    except (OSError, ValueError):
        recorded = {}
    recorded = recorded if isinstance(recorded, dict) else {}
    gcs = gcs or recorded.get("gcs_port") or free_port()
    if not dashboard:
        dashboard = recorded.get("dashboard_port")
        while not dashboard or dashboard == gcs:
            dashboard = free_port()
    return int(gcs), int(dashboard)


@dataclass(frozen=True)
class ListeningSocket:
    """A socket that accepts connections (TCP LISTEN) or datagrams (bound UDP).

    Attributes:
        pid: the process holding it.
        proto: ``tcp``, ``tcp6``, ``udp`` or ``udp6``.
        ip: local address as text (``127.0.0.1``, ``::``, ``::ffff:127.0.0.1``).
        port: local port.
    """

    pid: int
    proto: str
    ip: str
    port: int

    @property
    def loopback(self) -> bool:
        """True for 127.0.0.0/8, ``::1`` and IPv4-mapped loopback (``::ffff:127.x``)."""
        import ipaddress

        addr = ipaddress.ip_address(self.ip)
        mapped = getattr(addr, "ipv4_mapped", None)
        return (mapped or addr).is_loopback


def _proc_net_ip(hexaddr: str) -> str:
    """``/proc/net/tcp{,6}`` address text (32-bit words in host byte order) -> IP text."""
    import ipaddress

    raw = bytes.fromhex(hexaddr)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listening_sockets(pids: Iterable[int]) -> list[ListeningSocket]:
    """The listening TCP sockets and bound UDP sockets held by ``pids`` (Linux ``/proc``).

    Reads each process's ``fd`` links (``socket:[inode]``) and the kernel's socket tables
    ``/proc/<pid>/net/{tcp,tcp6,udp,udp6}`` (format: ``man 5 proc``, ``/proc/net/tcp``; TCP state
    ``0A`` is LISTEN). A process that exits meanwhile is skipped.
    """
    inodes: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes[link[8:-1]] = pid
    found: set[ListeningSocket] = set()
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        tables = {f"/proc/{pid}/net/{proto}" for pid in set(inodes.values())}
        for table in tables:
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                if len(cols) < 10 or cols[9] not in inodes:
                    continue
                if proto.startswith("tcp") and cols[3] != "0A":
                    continue
                hexip, hexport = cols[1].split(":")
                found.add(
                    ListeningSocket(inodes[cols[9]], proto, _proc_net_ip(hexip), int(hexport, 16))
                )
    return sorted(found, key=lambda s: (s.pid, s.proto, s.port, s.ip))


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C), SIGTERM and SIGHUP until the block ends, then act on the first
    (as KeyboardInterrupt). Main thread only (elsewhere the block just runs)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {sig: signal.signal(sig, lambda n, _f: caught.append(n)) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    if caught:
        raise KeyboardInterrupt
