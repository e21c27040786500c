"""The CLI's one error type: whatever goes wrong is reported as one line on stderr.

Text from outside (a file's names, a server's answer) is printed through `terminal_text`, so it
can neither break that line nor drive the terminal: a raw U+202E reverses what follows it on the
screen, an ESC starts a control sequence.
"""

from __future__ import annotations

import errno
import socket
import unicodedata

# Controls (C0, DEL, C1), format characters (bidi controls, zero-width joiners, ...), and the
# line and paragraph separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def terminal_text(text: str) -> str:
    """`text` with every character that is not shown as itself written as its escape
    (`\\u202e`, `\\x1b`, `\\n`): one line, displayed in the order it is stored."""
    if text.isprintable():
        return text
    return "".join(
        _escaped(char) if unicodedata.category(char) in _ESCAPED_CATEGORIES else char
        for char in text
    )


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class CliError(Exception):
    """An error the CLI reports as one line on stderr."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def claim_port(host: str, port: int) -> None:
    """Refuse, in one line and before anything starts, a port that another process listens on
    (a second `takt local`, or `takt receive` run twice when the README's block is pasted
    again): binding it later fails with a traceback, after moto has started."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CliError(
                    f"port {port} on {host} is in use (is takt already running?): "
                    f"stop it, or choose another with --port"
                ) from None
            raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
