"""takt's log lines as the tests read them: what Powertools formats, captured as it is emitted
(the keys of `log_keys` live in the emitting thread, so formatting later would lose them)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from takt.observability import logger


@contextmanager
def captured_log(level: int) -> Iterator[io.StringIO]:
    """Every line takt logs at `level` and above while the block runs, exactly as Powertools
    formats it; the logger's level is restored after."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    underlying = logging.getLogger(logger.name)
    before = underlying.level
    underlying.setLevel(level)
    underlying.addHandler(handler)
    try:
        yield stream
    finally:
        underlying.removeHandler(handler)
        underlying.setLevel(before)
