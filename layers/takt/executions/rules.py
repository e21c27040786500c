"""The lifecycle's rules as pure functions of the clock and the settings (no store, no AWS).

Each rule is written once here and applied by `takt.executions.lifecycle`, so a caller that makes
an execution runnable cannot pick a `check_at` of its own, and the unit tests pin every rule
without a table.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from takt.models.ids import to_ms


def check_at(now: datetime, resend_after_sec: float, *, delay_sec: float = 0) -> int:
    """When the watchdog looks at an execution that became runnable at `now` (epoch ms).

    A message sent with `delay_sec` is first visible after that delay; the watchdog resends it
    only if nobody leased it within `resend_after_sec` of then (`pending_resend_after_sec`).
    Earlier would duplicate messages that are merely waiting in a busy lane; later would delay
    the recovery of a lost one.
    """
    return to_ms(now + timedelta(seconds=delay_sec + resend_after_sec))
