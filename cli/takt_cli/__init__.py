"""takt's tooling, outside the Lambda layer: the `takt` command (`commands/`), the local runtime on
moto (`local/`), the capacity simulator and cost model (`capacity/`), the benchmarks' meter of AWS
calls (`metering/`) and the importers and exporters of other schedulers' jobs (`migrate/`).

It imports the runtime library (`takt`, under `layers/`); the library never imports it.
"""

from __future__ import annotations

import sys

# The top-level module of the `local` extra (pyproject.toml): `pip install takt` is the CLI for a
# deployed API; `takt local` and the local benchmarks need moto too.
_EXTRA = frozenset({"moto"})


def main() -> None:
    """The `takt` command. A command that needs the `local` extra (moto) says in one line how to
    get it rather than failing with a traceback."""
    try:
        from takt_cli.commands.main import main as run  # noqa: PLC0415 - a missing extra is reported in one line

        status = run()
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in _EXTRA:
            raise
        sys.stderr.write(
            f"takt: the command needs the 'local' extra ({error.name} is missing): "
            "pip install 'takt[local]'\n"
        )
        raise SystemExit(2) from error
    raise SystemExit(status)
