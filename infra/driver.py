"""The per-second drivers: how long each scheduler invocation lives, and the rule that starts one
every minute (docs/ARCHITECTURE.md, "The per-second drivers").

EventBridge starts one scheduler invocation a minute, and each lives `DRIVERS` minutes and
`HANDOVER_SEC` more, so `DRIVERS` of them always run, a minute apart in age, and every start
happens while the others are mid-life: no driver's end or start is ever the only thing between
two seconds being swept, at the top of the minute or anywhere else. They claim each second with
a conditional write and only the winner sweeps (`takt.dispatch.driver`), so one dying at any
instant costs the time until the next second's claim by another, not the rest of a minute.

The rule is not aligned to the second and may deliver an event twice or late: a second delivery
finds the event's start already claimed and returns at once, and a late one only overlaps the
others for a while. The reserved concurrency holds the planned overlap and one such extra start,
so neither is throttled (a throttle pages, `SchedulerThrottles`).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from takt.dispatch.driver import STOP_BEFORE_END_SEC

# Drivers alive at once, each started a minute after the one before.
DRIVERS = 2
# How long a driver outlives the start of the driver `DRIVERS` minutes younger: covers the rule's
# lateness (not aligned to the second; it is delivered within seconds) and a cold start.
HANDOVER_SEC = 10


def driver_life_sec(drivers: int) -> int:
    """How long each driver lives when `drivers` run at once (the `drivers` context knob: the
    small profile runs one, giving up the overlap)."""
    return drivers * 60 + HANDOVER_SEC


def driver_timeout_sec(drivers: int) -> int:
    return driver_life_sec(drivers) + STOP_BEFORE_END_SEC


def driver_concurrency(drivers: int) -> int:
    """`drivers` running, one more during each hand-over, and one late or repeated start."""
    return drivers + 2


DRIVER_LIFE_SEC = driver_life_sec(DRIVERS)
DRIVER_TIMEOUT_SEC = driver_timeout_sec(DRIVERS)
DRIVER_CONCURRENCY = driver_concurrency(DRIVERS)


class SchedulerDriver(Construct):
    """The one-minute rule that starts a scheduler driver."""

    def __init__(self, scope: Construct, construct_id: str, *, scheduler: lambda_.IFunction):
        super().__init__(scope, construct_id)
        events.Rule(
            self,
            "EveryMinute",
            description=(
                f"Starts one of takt's per-second drivers a minute; each runs {DRIVER_LIFE_SEC} s"
            ),
            schedule=events.Schedule.rate(Duration.minutes(1)),
            # An event older than a minute is covered by a newer driver.
            targets=[targets.LambdaFunction(scheduler, max_event_age=Duration.minutes(1))],
        )
