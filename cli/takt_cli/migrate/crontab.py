"""A crontab (Vixie's format) to job bodies.

Each command line becomes a job whose payload, `{"command": ...}` (with `"env"` when the crontab
sets variables), goes to the `--target` given. `CRON_TZ=` and `TZ=` lines set the zone of the
lines after them (cronie reads CRON_TZ; a TZ line is taken the same way here); other variable
lines (`MAILTO=`, `PATH=`, ...) are carried in the payload's `env`. Comments and blank lines are
passed over. Macros (`@daily`, ...) are takt's own; `@reboot` has no time and is refused. A system
crontab (`/etc/crontab`, `/etc/cron.d/*`, imported with `system=True`) has a user field after the
schedule: it is left out of the command and noted.

The five fields are Vixie's, which is takt's dialect, so the expression is kept as written and the
job keeps Vixie's meaning: the day fields OR when both are restricted and AND when either starts
with `*`, and takt's default DST rule is Vixie's (a fixed time skipped by spring-forward runs at
the jump, a repeated one runs once, a job whose minute or hour starts with `*` follows the clock).

A job is named after what its command runs, not after the whole line: the program's file name,
and the script it is given when the program is an interpreter (`python3 report.py`), without
paths, arguments or a trailing `# comment`. Lines whose names would collide get their schedule,
then a hash of their line, appended: names are unique in a tenant, and follow from the line alone
like its idempotency key.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections import Counter
from typing import Any

from takt_cli.migrate.model import Imported, checked, source_key

_VARIABLE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")
_ZONE_VARIABLES = frozenset({"CRON_TZ", "TZ"})
# Programs that run the file named after them: the file says more about the job than they do.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_INTERPRETERS = _SHELLS | frozenset(
    {"env", "nice", "nohup", "run-parts", "python", "python2", "python3", "perl", "ruby"}
    | {"node", "php", "java", "Rscript", "bundle"}
)
# Commands that set up for the work rather than do it (`cd /srv && make backup`).
_SET_UP = frozenset({"cd", "test", "[", "[[", "true", ":", "set", "export", "umask", "sleep"})
# A word that sets a variable for the command (`LANG=C sort ...`), passed over when naming.
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Characters a short name keeps; anything else (quotes, redirections, controls) is left out.
_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9._:+@-]+")
MAX_NAME = 200
SHORT_NAME = 60


def load(text: str, target: str, *, system: bool = False) -> list[Imported]:
    """Every command line of the crontab `text`, mapped to a job body for `target`; `system`
    says the lines have a user field after the schedule (`/etc/crontab`)."""
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
        found.append(_line(number, line, zone, dict(env), target, system))
    _distinct_names(found)
    return found


def _distinct_names(items: list[Imported]) -> None:
    """Give lines whose short names collide their schedule, then a hash of the line, as well."""
    bodies = [item.body for item in items if item.body is not None]
    for suffix in (_schedule_suffix, _line_suffix):
        counts = Counter(body["name"] for body in bodies)
        for body in bodies:
            if counts[body["name"]] > 1:
                body["name"] = suffix(body)


def _schedule_suffix(body: dict[str, Any]) -> str:
    return f"{body['name']} [{body['schedule']}, {body['time_zone']}]"


def _line_suffix(body: dict[str, Any]) -> str:
    line = f"{body['time_zone']}\n{body['schedule']}\n{body['payload']['command']}"
    return f"{body['name']} #{hashlib.sha256(line.encode()).hexdigest()[:8]}"


def short_name(command: str) -> str:
    """What the command runs, in a few words: `/usr/bin/rotate --all # nightly` is `rotate`,
    `/usr/bin/python3 /opt/jobs/report.py --daily` is `python3 report.py`, and
    `cd /srv && make backup` is `make` (set-up commands before the work are passed over)."""
    for simple in _simple_commands(command):
        words = [word for word in simple if not _ASSIGNMENT.match(word)]
        if not words or words[0] in _SET_UP:
            continue
        if words[0] in _SHELLS and "-c" in words[:-1]:
            return short_name(words[words.index("-c") + 1])
        named = [_file_name(words[0])]
        if named[0] in _INTERPRETERS:
            named += [_file_name(word) for word in words[1:] if not word.startswith("-")][:1]
        name = " ".join(part for part in named if part)[:SHORT_NAME].strip()
        if name:
            return name
    return "crontab job"


def _simple_commands(command: str) -> list[list[str]]:
    """The command's words, split where the shell would start another command (`&&`, `;`, `|`,
    a redirection), without its comment; plain words when the shell could not read it."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # the shell starts a comment only at a word's start (`a#b` is a word)
    found: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token.startswith("#"):
                break
            if token and all(char in lexer.punctuation_chars for char in token):
                found.append([])
            else:
                found[-1].append(token)
    except ValueError:  # an unbalanced quote: the shell would refuse it too; name it anyway
        return [command.partition(" #")[0].split()]
    return found


def _file_name(word: str) -> str:
    return _NAME_CHARACTER.sub("", word.rstrip("/").rpartition("/")[2])


def _line(
    number: int, line: str, zone: str, env: dict[str, str], target: str, system: bool
) -> Imported:
    if line.startswith("@"):
        schedule, _, command = line.partition(" ")
        command = command.strip()
    else:
        parts = line.split(None, 5)
        schedule, command = " ".join(parts[:5]), parts[5] if len(parts) == 6 else ""
    identity = hashlib.sha256(f"{zone}\n{schedule}\n{command}".encode()).hexdigest()[:32]
    item = Imported(f"line {number}", source_key("crontab", identity))
    user = ""
    if system:
        user, _, command = command.partition(" ")
        command = command.strip()
    if not command:
        item.reason = "no command after the schedule" + (" and the user" if system else "")
        return item
    if schedule.lower() == "@reboot":
        item.reason = "@reboot has no time to schedule"
        return item
    if user:
        item.notes.append(f"ran as user {user!r}; takt's target decides who runs it")
    elif command.split(None, 1)[0] == "root":
        item.notes.append("the command starts with 'root': a system crontab's user? use --system")
    if "%" in command.replace("\\%", ""):
        item.notes.append("'%' is cron's newline and stdin marker; the command is kept as written")
    payload: dict[str, Any] = {"command": command}
    if env:
        payload["env"] = env
    item.body = {
        "name": short_name(command),
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
