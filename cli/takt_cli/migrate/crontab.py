"""A crontab (Vixie's user crontab format) to job bodies.

Each command line becomes a job whose payload, `{"command": ...}` (with `"env"` when the crontab
sets variables), goes to the `--target` given. `CRON_TZ=` and `TZ=` lines set the zone of the
lines after them (cronie reads CRON_TZ; a TZ line is taken the same way here); other variable
lines (`MAILTO=`, `PATH=`, ...) are carried in the payload's `env`. Comments and blank lines are
passed over. Macros (`@daily`, ...) are takt's own; `@reboot` has no time and is refused. The
five fields are Vixie's, which is takt's dialect, so the expression is kept as written.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

from takt_cli.migrate.model import Imported, checked, source_key

_VARIABLE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")
_ZONE_VARIABLES = frozenset({"CRON_TZ", "TZ"})
MAX_NAME = 200


def load(text: str, target: str) -> list[Imported]:
    """Every command line of the crontab `text`, mapped to a job body for `target`."""
    zone = "UTC"
    env: dict[str, str] = {}
    found: list[Imported] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        variable = _VARIABLE.match(line)
        if variable is not None:
            value = _unquoted(variable.group("value").strip())
            if variable.group("name") in _ZONE_VARIABLES:
                zone = value
            else:
                env[variable.group("name")] = value
            continue
        found.append(_line(number, line, zone, dict(env), target))
    _distinct_names(found)
    return found


def _distinct_names(items: list[Imported]) -> None:
    """Name a command that several lines run after its schedule and zone too, as job names are
    unique in a tenant: the name follows from the line alone, like its idempotency key."""
    bodies = [item.body for item in items if item.body is not None]
    counts = Counter(body["name"] for body in bodies)
    for body in bodies:
        if counts[body["name"]] > 1:
            suffix = f" [{body['schedule']}, {body['time_zone']}]"
            body["name"] = body["payload"]["command"][: MAX_NAME - len(suffix)] + suffix


def _line(number: int, line: str, zone: str, env: dict[str, str], target: str) -> Imported:
    if line.startswith("@"):
        schedule, _, command = line.partition(" ")
        command = command.strip()
    else:
        parts = line.split(None, 5)
        schedule, command = " ".join(parts[:5]), parts[5] if len(parts) == 6 else ""
    identity = hashlib.sha256(f"{zone}\n{schedule}\n{command}".encode()).hexdigest()[:32]
    item = Imported(f"line {number}", source_key("crontab", identity))
    if not command:
        item.reason = "no command after the schedule"
        return item
    if schedule.lower() == "@reboot":
        item.reason = "@reboot has no time to schedule"
        return item
    if "%" in command.replace("\\%", ""):
        item.notes.append("'%' is cron's newline and stdin marker; the command is kept as written")
    payload: dict[str, Any] = {"command": command}
    if env:
        payload["env"] = env
    item.body = {
        "name": command[:MAX_NAME],
        "schedule": schedule,
        "time_zone": zone,
        "target": target,
        "payload": payload,
    }
    return checked(item)


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
