"""The flags of `takt jobs create` and `takt jobs update`, read from the API's contract.

The API's request models (`takt.api.models.JobCreate`, `JobPatch`) are the one list of a job's
fields; the OpenAPI document generated from them (`docs/openapi.json`, which a test keeps equal
to the models) is what the CLI reads here, with `json` alone, so `takt jobs --help` loads no
pydantic. Each field becomes a flag: its name is the field's (`catchup_window` is
`--catchup-window`, `retry.jitter` is `--retry-jitter`), its choices are the field's enum, its
range the field's bounds, its help the field's description and default. A field added to the
models therefore gets its flag with no edit here, and the CLI cannot offer fewer choices than the
API takes (`tests/unit/cli/test_cli_contract.py` walks the document to hold that).

Written by hand below is only what the document cannot say: the shorter names users know
(`--cron`, `--every`, `--tz`, `--max-attempts`) and help in the CLI's words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import click
from click.shell_completion import CompletionItem

# Fields whose flag is not named after them: the names the CLI has always had.
FLAG_NAMES = {
    "schedule": "--cron",
    "interval": "--every",
    "time_zone": "--tz",
    "timeout_sec": "--timeout",
    "calendars": "--calendar",
    "retry.max_attempts": "--max-attempts",
    "retry.backoff": "--backoff",
    "retry.initial_interval": "--retry-initial",
    "retry.max_interval": "--retry-max",
    "notify.after_failures": "--notify-after",
}

# Help in the CLI's words where the field's description is written for the API's reader (or
# missing); every other flag's help is the field's description.
HELP = {
    "name": "A name, unique among your jobs; commands take it as the JOB.",
    "schedule": "Cron expression (5 fields, optional seconds).",
    "interval": "Fixed interval, e.g. 90s, 1h.",
    "run_at": "One-off time, RFC 3339 (e.g. 2026-03-02T12:00:00Z).",
    "time_zone": "IANA time zone the cron is read in.",
    "start_at": "No run before this time (RFC 3339).",
    "end_at": "No run after this time (RFC 3339).",
    "target": "What each run calls: an http(s) URL, handler:NAME, an SQS, SNS or EventBridge "
    "ARN, or the target's JSON object.",
    "payload": "The JSON each run sends, @file, or - for stdin.",
    "tasks": "A workflow instead of one target: its tasks as JSON, @file, or - for stdin.",
    "priority": "Lane.",
    "timeout_sec": "Seconds an attempt may take.",
    "retry.max_attempts": "Attempts before a run is dead.",
    "retry.backoff": "Wait between attempts.",
    "retry.initial_interval": "First wait, e.g. 5s.",
    "retry.max_interval": "Longest wait, e.g. 1h.",
    "retry.jitter": "Randomize waits.",
    "jitter": "Fire each run up to this long after its time, e.g. 30s.",
    "calendars": "Skip runs in this calendar's windows (repeatable).",
    "overlap": "When a run is due while the last one runs.",
    "catchup": "Runs missed while paused or down.",
    "catchup_window": "How far back missed runs count, e.g. 1h.",
    "notify.to": "Where incidents are told: an SNS topic or EventBridge bus ARN, or a URL.",
    "notify.on": "Which incidents (repeatable; both unless given): an execution dead, or the job "
    "stopped (--notify-after failures in a row).",
    "notify.after_failures": "Failures in a row that make 'stopped'.",
    "dst.gap": "A cron time in the spring-forward gap.",
    "dst.overlap": "A cron time that occurs twice in the fall-back hour.",
    "status": "Active, or paused to resume it later.",
    "pause_until": "Skip the runs before this instant (RFC 3339); the job then resumes by itself.",
    "idempotency_key": "Creating twice with one key makes one job.",
    "run_late": "Run a --run-at older than the catch-up window at once (else it is refused).",
}

# An enum this long is checked and completed, not printed in --help (the time zones).
LISTED_CHOICES = 24
_SCALARS = {"string": str, "integer": int, "number": float}


@dataclass(frozen=True)
class JobFlag:
    """One flag of a job command and the body field it sets (`retry.max_attempts` is the
    `max_attempts` of the `retry` object); an `as_json` flag's value is JSON text."""

    flag: str
    field: str
    settings: dict[str, Any]
    as_json: bool = False

    @property
    def param(self) -> str:
        """The name click gives the flag's value."""
        return self.flag.removeprefix("--").replace("-", "_")


class Listed(click.ParamType[str, Any]):
    """A choice among many (the IANA time zones): completed and checked, but not listed whole in
    --help or in an error, as click.Choice would."""

    def __init__(self, name: str, values: list[str]) -> None:
        self.name = name
        self.values = frozenset(values)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value not in self.values:
            self.fail(f"{value!r} is not one of the {len(self.values)} the API takes", param, ctx)
        return str(value)

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(v) for v in sorted(self.values) if v.startswith(incomplete)]


def openapi_path() -> Path:
    """The OpenAPI document: the repository's when takt runs from a checkout, else the copy an
    installed wheel carries (pyproject.toml's force-include)."""
    here = Path(__file__).resolve()
    for path in (here.parents[3] / "docs" / "openapi.json", here.parents[1] / "openapi.json"):
        if path.is_file():
            return path
    raise FileNotFoundError("takt's OpenAPI document (docs/openapi.json) is not installed")


@cache
def schemas() -> dict[str, Any]:
    """The document's named schemas (`JobCreate`, `RetryPolicy`, ...)."""
    document = json.loads(openapi_path().read_text(encoding="utf-8"))
    found: dict[str, Any] = document["components"]["schemas"]
    return found


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a `$ref` followed and a nullable `anyOf` reduced to its first other option
    (a target's is its text form)."""
    options = [o for o in schema.get("anyOf", []) if o != {"type": "null"}]
    if options:
        schema = {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        named = schemas()[ref.rsplit("/", 1)[1]]
        schema = {**named, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def fields_of(model: str) -> list[tuple[str, dict[str, Any]]]:
    """(field, schema) for each field of `model` and of its nested objects (`retry.backoff`)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name, raw in schemas()[model]["properties"].items():
        schema = resolved(raw)
        nested = schema.get("properties")
        if schema.get("type") == "object" and isinstance(nested, dict):
            found += [(f"{name}.{inner}", resolved(s)) for inner, s in nested.items()]
        else:
            found.append((name, schema))
    return found


def _param_type(field: str, schema: dict[str, Any]) -> click.ParamType[Any, Any] | type | None:
    """The click type of one value of `schema`; None for JSON text."""
    choices = schema.get("enum")
    if isinstance(choices, list):
        if len(choices) > LISTED_CHOICES:
            return Listed(field.rsplit(".", 1)[-1].upper(), choices)
        return click.Choice(choices)
    if schema.get("type") == "integer" and ("minimum" in schema or "maximum" in schema):
        low, high = schema.get("minimum"), schema.get("maximum")
        return click.IntRange(
            None if low is None else int(low), None if high is None else int(high)
        )
    return _SCALARS.get(schema.get("type", ""))


def _help(field: str, schema: dict[str, Any], defaulted: bool) -> str:
    """The flag's help: the CLI's words or the field's description, and the default that applies
    when the flag is not given."""
    text = HELP.get(field) or schema.get("description") or schema.get("title") or field
    text = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
    default = schema.get("default")
    if defaulted and default is not None and not isinstance(default, bool | dict):
        shown = ", ".join(default) if isinstance(default, list) else default
        text += f" [default: {shown}]"
    return text


def _settings(field: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """click.option's type settings for a value of `schema`; None when it is read as JSON."""
    items = resolved(schema.get("items", {}))
    if schema.get("type") == "array" and items.get("type") in _SCALARS:
        return {"multiple": True, **(_settings(field, items) or {})}
    if schema.get("type") == "boolean":
        return {"is_flag": True, "default": None}
    kind = _param_type(field, schema)
    return None if kind is None else {"type": kind}


def job_flags_of(model: str, *, defaults: bool) -> list[JobFlag]:
    """The flags of a command whose body is the schema `model` (`JobCreate`, `JobPatch`), in
    the order of their names. With `defaults` (a create) each help says the field's default; an
    update's field left out keeps its value instead, so its help names none."""
    flags = []
    for field, schema in fields_of(model):
        flag = FLAG_NAMES.get(field, "--" + field.replace(".", "-").replace("_", "-"))
        settings = _settings(field, schema)
        options = {**(settings or {}), "help": _help(field, schema, defaults)}
        flags.append(JobFlag(flag, field, options, as_json=settings is None))
    return sorted(flags, key=lambda f: f.flag)
