"""`takt local --regions us-east-1,us-east-2`: each region a process of its own, the API in both,
the tables replicated, and no region's process outliving the run."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.e2e.harness import poll
from tests.e2e.regions_harness import RegionsRun

pytestmark = pytest.mark.e2e

REGIONS = "us-east-1,us-east-2"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegionsRun]:
    started = RegionsRun.start(tmp_path_factory.mktemp("regions") / "takt.log", REGIONS)
    yield started
    started.stop()


def test_each_region_is_a_process_of_its_own_with_its_api_on_the_next_port(
    run: RegionsRun,
) -> None:
    ports = [int(region.url.rsplit(":", 1)[1]) for region in run.regions]
    pids = {region.pid for region in run.regions}
    assert [region.name for region in run.regions] == REGIONS.split(",")
    assert ports == [ports[0], ports[0] + 1], f"the API is on --port, then the next: {ports}"
    assert len(pids) == 2 and run.process.pid not in pids, "one process per region"
    assert all(region.alive() for region in run.regions)


def test_a_job_created_in_one_region_is_read_in_the_other(run: RegionsRun) -> None:
    east1, east2 = run.region("us-east-1"), run.region("us-east-2")
    job = east1.api.create_job({"schedule": "0 6 * * *", "target": "https://svc.example/r"})

    seen = poll(
        lambda: east2.api.request("GET", f"/v1/jobs/{job['id']}").status,
        lambda status: status == 200,
        10,
        "the job replicated to us-east-2",
    )
    assert seen == 200, "jobs are created in one region and read in any (global tables)"


def test_the_first_region_takes_the_lease_on_the_witness(run: RegionsRun) -> None:
    lease = poll(run.lease, lambda found: found is not None, 60, "the first lease")
    assert lease is not None and (lease["holder"], lease["epoch"]) == ("us-east-1", "1"), (
        f"the first region of --regions writes the first lease, on the witness every region "
        f"reads: {lease}"
    )


def test_no_region_outlives_a_parent_killed_with_sigkill(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    doomed = RegionsRun.start(tmp_path_factory.mktemp("orphans") / "takt.log", REGIONS)
    os.kill(doomed.process.pid, signal.SIGKILL)
    doomed.process.wait()

    left = poll(
        lambda: [region.name for region in doomed.regions if region.alive()],
        lambda alive: not alive,
        30,
        "every region's process gone after the parent's kill -9",
    )
    assert left == [], "no orphans: a region's process exits when its parent dies"
