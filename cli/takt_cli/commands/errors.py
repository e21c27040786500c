"""The CLI's one error type: whatever goes wrong is reported as one line on stderr."""

from __future__ import annotations


class CliError(Exception):
    """An error the CLI reports as one line on stderr."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
