"""Make moto's server answer faster, for the local runtime and the tests only.

moto's server recomputes two things on every request that never change while it runs: the list
of its service modules (a directory listing) and the method names of each response class
(`inspect.getmembers`). Together they are about half of a request's CPU time in this process;
caching them changes no answer. Nothing here is shipped in the Lambda layer.
"""

from __future__ import annotations

import functools
import logging


def apply() -> None:
    """Cache moto's per-request reflection, and silence its per-request access log."""
    import moto.backends
    import moto.core.responses
    import moto.core.utils

    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: iter(modules)
    cached = functools.lru_cache(maxsize=None)(moto.core.utils.method_names_from_class)
    setattr(moto.core.responses, "method_names_from_class", cached)  # noqa: B010
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
