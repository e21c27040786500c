"""One action over many items on a bounded pool of threads, each in a copy of the caller's
context.

The work this is for waits on DynamoDB (a watchdog checking the claims' watch lists, a job
listing reading its jobs' histories), and botocore's clients are thread-safe. The context copy
matters: what the caller's context carries (`takt bench`'s meter counts a call under the
invocation its context names, the logger's keys) follows the work into the pool. The claimer
keeps a pool of its own across claims (`takt.dispatch.claimer.Phases`), which also times each
action's CPU.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def each_in_context(
    action: Callable[[T], R], items: Sequence[T], threads: int, *, name: str
) -> list[R]:
    """`action` on every item, at most `threads` at a time on threads named `name_<n>`; the
    results in order. Every action finishes before this returns, and the first failure is
    raised then. One item, or one thread, runs in the caller's thread."""
    if len(items) <= 1 or threads <= 1:
        return [action(item) for item in items]
    with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix=name) as pool:
        futures = [pool.submit(contextvars.copy_context().run, action, item) for item in items]
    return [future.result() for future in futures]
