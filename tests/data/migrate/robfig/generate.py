"""Write vectors.jsonl: when robfig/cron v3 (Kubernetes' cron) fires a set of CronJob schedules.

Run from the repository root, with Go and Debian's robfig/cron installed (README.md):

    python3 tests/data/migrate/robfig/generate.py

It builds oracle.go against the installed robfig/cron, asks it for the next instants of every
schedule below from instants around the 2026-2027 clock changes of Berlin, New York and Lord
Howe (and a few ordinary ones), and writes the answers, robfig's refusals included. The schedules
are hand-picked forms (the day fields' `*` rule, `N/step`, names, `?`, descriptors, times in and
around the changes) and forms drawn at random from cron's grammar with a fixed seed, so a run
gives the same file. Standard library only, so it runs without takt's environment.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
OUT = HERE / "vectors.jsonl"
ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll")
COUNT = 5
SEED = 20261205
RANDOM_SPECS = 50

HAND_PICKED = [
    # The day fields: robfig ANDs them when an item of either is `*` or `?` (or `*/1`), and a
    # `*/n` with n > 1 is restricted; Vixie looks at the field's first character.
    "0 6 */2 * 1",
    "0 6 */2 * mon",
    "30 7 */3 * 5",
    "0 6 1,*/2 * 1",
    "0 6 */1 * 1",
    "0 6 * * */2",
    "0 6 13 * */2",
    "0 6 1-10/3 * 1",
    "0 6 1,15 * 1-5",
    "0 6 ? * 1",
    "0 6 15 * ?",
    "0 6 1,* * 1",
    "0 6 13 * 1,*",
    "0 0 31 2 0",
    # Day-of-week steps from a value: robfig stops at 6.
    "0 9 * * 5/2",
    "0 9 * * 1/3",
    "0 9 * * 0/4",
    "0 9 * * 6/1",
    "0 9 10 * 5/2",
    "0 9 * * 1-6/2",
    # Names, ranges, steps elsewhere.
    "15 10 * jan-mar,oct-dec mon-fri",
    "0 12 * */5 SUN",
    "5/20 4-8 * * *",
    "0 22 L * *",
    "0 0 * * 7",
    "0 0 * * fri-sun",
    "@hourly",
    "@daily",
    "@weekly",
    "@monthly",
    "@yearly",
    "@Daily",
    # Times in and near the clock changes (Berlin and New York 2:00, Lord Howe 2:00, 30 minutes).
    "30 2 * * *",
    "0 2 * * *",
    "30 1 * * *",
    "45 1 * * *",
    "15 1 * * *",
    "0 3 * * *",
    "30 3 * * *",
    "0 9 * * *",
    "30 9 * * *",
    "30,45 1 * * *",
    "0,30 1-3 * * *",
    "*/15 * * * *",
    "*/20 1-3 * * *",
    "0 * * * *",
    "30 * * * *",
    "* 2 * * *",
    "59 1 * * 0",
    "0 1,2,3 * * 0",
    "0 1 * * *",
]


def spec_at_random(rng: random.Random) -> str:
    """A five-field spec drawn from the grammar robfig accepts, leaning to the day fields."""
    return " ".join(
        [
            _field(rng, 0, 59, few=True),
            _field(rng, 0, 23, few=True),
            _field(rng, 1, 31),
            _field(rng, 1, 12, names=("jan", "mar", "jun", "oct", "dec"), wide=True),
            _field(rng, 0, 6, names=("sun", "mon", "wed", "fri", "sat")),
        ]
    )


def _field(
    rng: random.Random,
    low: int,
    high: int,
    *,
    names: tuple[str, ...] = (),
    few: bool = False,
    wide: bool = False,
) -> str:
    if wide and rng.random() < 0.6:
        return "*"
    items = [_item(rng, low, high, names, few) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    return ",".join(items)


def _item(rng: random.Random, low: int, high: int, names: tuple[str, ...], few: bool) -> str:
    roll = rng.random()
    value = rng.randint(low, high)
    if few and roll < 0.55:
        return str(value)
    if roll < 0.25:
        return "*"
    if roll < 0.4:
        return f"*/{rng.choice((1, 2, 3, 5, 7, 10))}"
    if roll < 0.55:
        return str(value) if not names or rng.random() < 0.7 else rng.choice(names)
    if roll < 0.7:
        last = rng.randint(value, high)
        return f"{value}-{last}"
    if roll < 0.85:
        return f"{value}/{rng.choice((2, 3, 4, 7))}"
    last = rng.randint(value, high)
    return f"{value}-{last}/{rng.choice((2, 3))}"


def starts() -> list[tuple[str, datetime]]:
    """(zone, instant): a day before, a minute before and 20 minutes after each clock change
    from July 2026 to June 2027 (one forward, one back) in each zone, and a month's end."""
    found = []
    for zone in ZONES:
        for change in _changes(zone):
            for shift in (-timedelta(hours=26), -timedelta(minutes=1), timedelta(minutes=20)):
                found.append((zone, change + shift))
        found.append((zone, datetime(2027, 1, 30, 22, tzinfo=UTC)))
    return found


def _changes(zone: str) -> list[datetime]:
    """The instants (UTC, whole half hours) at which the zone's offset changes from July 2026
    to June 2027."""
    tz = ZoneInfo(zone)
    found = []
    t = datetime(2026, 7, 1, tzinfo=UTC)
    step = timedelta(minutes=30)
    while t < datetime(2027, 7, 1, tzinfo=UTC):
        if (t + step).astimezone(tz).utcoffset() != t.astimezone(tz).utcoffset():
            found.append(t + step)
        t += step
    return found


def requests() -> list[dict[str, object]]:
    rng = random.Random(SEED)
    specs = HAND_PICKED + [spec_at_random(rng) for _ in range(RANDOM_SPECS)]
    return [
        {"spec": spec, "tz": zone, "from": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "count": COUNT}
        for spec in specs
        for zone, start in starts()
    ]


def main() -> None:
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": "/usr/share/gocode"}
    with tempfile.TemporaryDirectory() as work:
        binary = Path(work) / "oracle"
        env["GOCACHE"] = str(Path(work) / "cache")
        subprocess.run(
            ["go", "build", "-o", str(binary), str(HERE / "oracle.go")], env=env, check=True
        )
        stdin = "".join(json.dumps(request) + "\n" for request in requests())
        done = subprocess.run(
            [str(binary)], input=stdin, capture_output=True, text=True, check=True
        )
    OUT.write_text(done.stdout, encoding="utf-8")
    print(f"{len(done.stdout.splitlines())} vectors written to {OUT}")


if __name__ == "__main__":
    main()
