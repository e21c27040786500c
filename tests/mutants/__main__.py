"""`make mutants`: apply each named mutation (tests/mutants/mutations.py) to a copy of the checkout,
run the tests named for it, and print which test caught it, or SURVIVED.

The working tree is never touched: each job copies the checkout's tracked and untracked,
not-ignored files (uncommitted edits included) into a temporary directory, and mutates and restores
files there, one mutation at a time. The copy runs on this checkout's virtualenv with its own
`layers`, `cli` and root first on PYTHONPATH, so the processes the tests start (a `takt local`, a
`takt worker`) import the mutated code too.

First a baseline: every listed test must pass on the unmutated copy, or a "caught" would mean
nothing. Then each mutation's tests run with `-x` under a timeout; the first failing test id is
what caught it, and the line its failure printed is shown beside the rule it breaks.

A catch counts only when the test judged the mutated program and found the rule broken: the
failure must be an assertion (`AssertionError`, or pytest's own `Failed`, as when
`pytest.raises` sees nothing raised). A mutation whose program fails on its own (a DynamoDB
`ValidationException` from an expression left half-edited, a `NameError`, a fixture that cannot
be set up) would be "caught" by any test that happens to run it, rules or not: the tool refuses
such a mutation, names the exception, and exits 1 as for a survivor, so the mutation is
rewritten as a valid program. Exits 1 if any mutation survived, was refused or could not be run.

    python -m tests.mutants                      # all, two at a time
    python -m tests.mutants --only watchdog-ignores-the-clock-margin --jobs 1
    python -m tests.mutants --list
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

from tests.mutants.mutations import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
# A summary line: "FAILED <id> - <message>"; an id may hold spaces (a parameter's).
# pytest prints it whole only when the line fits the terminal: the tool's terminal is wide.
FAILED = re.compile(r"^(FAILED|ERROR) (.+?)(?: - (.*))?$", re.MULTILINE)
SUMMARY = "short test summary info"
# The failures that are a test's verdict on the program (a bare `assert` that pytest rewrote
# prints as "assert <expression>"); anything else is the program failing on its own.
VERDICTS = re.compile(r"^(?:AssertionError|Failed|assert)\b")
# pytest's exit code when tests ran and some failed: the only one that means "caught".
TESTS_FAILED = 1


@dataclass(frozen=True)
class Verdict:
    """What one mutation's run came to: the test that caught it and the line its failure printed,
    or why it was not caught (`problem`); `refused` when its program failed on its own."""

    mutation: Mutation
    caught_by: str | None
    seconds: float
    problem: str = ""
    failure: str = ""
    refused: bool = False

    @property
    def survived(self) -> bool:
        return self.caught_by is None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown:
        print(f"mutants: no mutation named {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.breaks} ({m.path})")
        return 0
    started = time.monotonic()
    with copies(args.jobs) as pool:
        if not args.no_baseline:
            tests = list(dict.fromkeys(t for m in chosen for t in m.tests))
            print(f"baseline: {len(tests)} tests on the unmutated copy", flush=True)
            code, output = _pytest(pool[0], tests, args.timeout * 3, workers=args.jobs)
            if code != 0:
                print(output[-4000:])
                print("mutants: the baseline fails; fix it before judging mutations")
                return 2
        verdicts = _run_all(chosen, pool, args.timeout)
    print()
    print(table(verdicts))
    print()
    total = time.monotonic() - started
    survived = [v for v in verdicts if v.survived]
    refused = sum(v.refused for v in verdicts)
    print(
        f"{len(verdicts) - len(survived)} of {len(verdicts)} mutations caught in {total:.0f} s "
        f"({args.jobs} at a time){f'; {refused} refused' if refused else ''}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 1 if survived else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    parser.add_argument("--jobs", type=int, default=2, help="mutations run at once (copies)")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds one mutation's tests may take"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run on the unmutated copy"
    )
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    return parser


def _run_all(chosen: list[Mutation], pool: list[Path], timeout: float) -> list[Verdict]:
    """Each mutation on a free copy, `len(pool)` at a time; verdicts in the list's order."""
    free: Queue[Path] = Queue()
    for copy in pool:
        free.put(copy)
    lock = threading.Lock()

    def judge(mutation: Mutation) -> Verdict:
        copy = free.get()
        try:
            verdict = run_one(mutation, copy, timeout)
        finally:
            free.put(copy)
        with lock:
            print(_line(verdict), flush=True)
        return verdict

    with ThreadPoolExecutor(max_workers=len(pool)) as executor:
        return list(executor.map(judge, chosen))


def _line(verdict: Verdict) -> str:
    """One mutation's verdict as the run prints it: the rule, then who caught it and how."""
    head = f"{verdict.mutation.name} ({verdict.seconds:.0f} s)\n  rule: {verdict.mutation.breaks}"
    if verdict.refused:
        return f"{head}\n  REFUSED: {verdict.problem}"
    if verdict.caught_by is None:
        return f"{head}\n  SURVIVED{': ' + verdict.problem if verdict.problem else ''}"
    return f"{head}\n  caught by: {verdict.caught_by}\n  failure: {verdict.failure}"


def run_one(mutation: Mutation, copy: Path, timeout: float) -> Verdict:
    """Apply `mutation` in `copy`, run its tests, restore the file: who caught it, if anyone."""
    target = copy / mutation.path
    original = target.read_text()
    mutated = original
    for old, new in mutation.edits:
        found = original.count(old)
        if found != 1:
            return Verdict(mutation, None, 0.0, f"its text occurs {found} times in {mutation.path}")
        mutated = mutated.replace(old, new)
    started = time.monotonic()
    target.write_text(mutated)
    try:
        code, output = _pytest(copy, list(mutation.tests), timeout)
    finally:
        target.write_text(original)
    seconds = time.monotonic() - started
    if code == TESTS_FAILED:
        return judged(mutation, output, seconds)
    if code is None:
        return Verdict(mutation, None, seconds, f"timed out after {timeout:g} s")
    if code != 0:
        return Verdict(mutation, None, seconds, f"pytest exited {code}: {output[-300:]!r}")
    return Verdict(mutation, None, seconds)


def judged(mutation: Mutation, output: str, seconds: float) -> Verdict:
    """The verdict of a run whose tests failed, from pytest's summary line of the first failure:
    caught when that failure is an assertion, refused when it is the program raising on its own
    (or a test that could not be set up), since then no rule was judged."""
    # Captured log lines also start with "ERROR ": only the short summary names failures.
    _, _, summary = output.rpartition(SUMMARY)
    failed = FAILED.search(summary)
    if failed is None:
        return Verdict(mutation, None, seconds, "a test failed but pytest printed no summary line")
    kind, test, message = failed.group(1), failed.group(2), (failed.group(3) or "").strip()
    if kind == "FAILED" and VERDICTS.match(message):
        return Verdict(mutation, test, seconds, failure=message)
    why = f"{test} {'could not be set up' if kind == 'ERROR' else 'failed'} with {message!r}"
    return Verdict(
        mutation,
        None,
        seconds,
        f"its program fails on its own, not on an assertion: {why}",
        refused=True,
    )


def _pytest(
    copy: Path, tests: list[str], timeout: float, workers: int = 0
) -> tuple[int | None, str]:
    """Run pytest on `tests` in `copy`; (exit code or None on a timeout, its output)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(copy / p) for p in ("layers", "cli", ".")),
        "PATH": os.pathsep.join([str(ROOT / ".tools" / "bin"), os.environ.get("PATH", "")]),
        # pytest cuts a summary line at the terminal's width: the failure's message is the verdict.
        "COLUMNS": "1000",
    }
    command = [
        str(PYTHON),
        *("-m", "pytest", *tests),
        *("-x", "-q", "-rfE", "--no-header", "-p", "no:cacheprovider", "-n", str(workers)),
    ]
    # A session of its own, so a timeout ends everything the tests started, and nothing else.
    process = subprocess.Popen(
        command,
        cwd=copy,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output
    return process.returncode, output


@contextmanager
def copies(count: int) -> Iterator[list[Path]]:
    """`count` copies of the checkout's files (tracked, and untracked but not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    files = [f for f in listed.split("\0") if f and (ROOT / f).is_file()]
    base = Path(tempfile.mkdtemp(prefix="takt-mutants-"))
    try:
        made = []
        for n in range(count):
            copy = base / f"copy-{n}"
            for name in files:
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, copy / name)
            made.append(copy)
        yield made
    finally:
        shutil.rmtree(base, ignore_errors=True)


def table(verdicts: list[Verdict]) -> str:
    """The verdicts as a Markdown table (docs/RELIABILITY.md carries it)."""
    rows = [
        "| mutation | breaks | caught by | its failure | s |",
        "|---|---|---|---|---|",
    ]
    for v in verdicts:
        if v.caught_by:
            caught, failure = f"`{v.caught_by}`", _cell(v.failure)
        else:
            caught = f"**{'REFUSED' if v.refused else 'SURVIVED'}** {v.problem}".rstrip()
            failure = ""
        name, breaks = v.mutation.name, v.mutation.breaks
        rows.append(f"| `{name}` | {breaks} | {caught} | {failure} | {v.seconds:.0f} |")
    return "\n".join(rows)


def _cell(text: str, limit: int = 160) -> str:
    """A failure's message as one table cell: pipes escaped, cut to `limit` characters."""
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


if __name__ == "__main__":
    sys.exit(main())
