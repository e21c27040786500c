"""In-memory tables that implement the store ports (`takt.store.ports`), for unit tests of the
engines' decisions: the claimer, the watchdog, the worker's runner and the execution lifecycle.

Each fake keeps its items as DynamoDB keeps them (attribute maps under the table's key, made by
the store's own item converters) and evaluates every conditional write the way the DynamoDB store
words it: a create is refused when the key exists (`attribute_not_exists`), an execution's
`Transition` fails with ExecutionConflictError carrying the execution as it is when its fence on
(state, attempt, lease token, ...) does not hold, a job's advance is fenced on its version, a due
item is deleted only if unchanged. None of them subclasses a store or holds a client: an engine
that reaches past its port fails its type check, not a test at run time.

What they do not model is said where it matters (eventual consistency of the indexes, the
attention index, throttling, DynamoDB's 1 MB pages). tests/integration/test_fakes_agree.py runs
one script on each fake and on its store on moto and compares every answer; the stores' own
tests run on moto too, and the engines' integration and chaos tests run the same decisions on
the real expressions.
"""

from tests.support.fakes.calendars import FakeCalendars
from tests.support.fakes.due import FakeDue, FakeWatches
from tests.support.fakes.executions import FakeExecutions
from tests.support.fakes.jobs import FakeJobs
from tests.support.fakes.lanes import FakeLanes
from tests.support.fakes.quarantine import FakeQuarantine, Parked
from tests.support.fakes.regions import FakeRegionLeases

__all__ = [
    "FakeCalendars",
    "FakeDue",
    "FakeExecutions",
    "FakeJobs",
    "FakeLanes",
    "FakeQuarantine",
    "FakeRegionLeases",
    "FakeWatches",
    "Parked",
]
