"""Local ports of the embedded servers (S3, Kafka): a free one, and whether one is taken."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0 and not connected_to_itself(s)


def connected_to_itself(s: socket.socket) -> bool:
    """A connect to a free port of the ephemeral range can be given that same port as its own and
    meet itself (TCP's simultaneous open): connected, with nobody listening. Polling a server that
    is starting did (a test saw `listening` say yes, then every request refused)."""
    try:
        return s.getsockname() == s.getpeername()
    except OSError:
        return False
