"""takt's tooling, outside the Lambda layer: the `takt` command (`commands/`), the local runtime on
moto (`local/`), the capacity simulator and cost model (`capacity/`), the benchmarks' meter of AWS
calls (`metering/`) and the importers and exporters of other schedulers' jobs (`migrate/`).

It imports the runtime library (`takt`, under `layers/`); the library never imports it.
"""

from __future__ import annotations

import sys

# The top-level modules of the `local` extra's packages (pyproject.toml).
_EXTRA = frozenset({"click", "moto", "yaml"})


def main() -> None:
    """The `takt` command. Its dependencies (click, moto) are the `local` extra's: without them,
    one line says how to get them rather than a traceback."""
    try:
        from takt_cli.commands.main import main as run  # noqa: PLC0415 - the local extra is optional: without it, one line says so
    except ModuleNotFoundError as error:
        if error.name not in _EXTRA:
            raise
        sys.stderr.write(
            f"takt: the command needs the 'local' extra ({error.name} is missing): "
            "pip install 'takt[local]'\n"
        )
        raise SystemExit(2) from error
    raise SystemExit(run())
