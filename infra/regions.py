"""The regions of a deployment across regions (`-c regions=...`, docs/DEPLOY.md, "Regions").

The data tables are MREC global tables, which may span any regions; the `regions` lease table
is an MRSC global table, and AWS accepts one only as three replicas, or two and a witness, all
inside one of its region sets (docs/ARCHITECTURE.md, "Regions"). The lease table is what bounds
the choice, so the plan is checked against MRSC's rule: two regions and a witness, or three.
"""

from __future__ import annotations

from dataclasses import dataclass

# AWS's region sets for MRSC global tables (CloudFormation's AWS::DynamoDB::GlobalTable
# GlobalTableWitness): the replicas and the witness must all be in one of them.
MRSC_REGION_SETS: dict[str, tuple[str, ...]] = {
    "US": ("us-east-1", "us-east-2", "us-west-2"),
    "EU": ("eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"),
    "AP": ("ap-northeast-1", "ap-northeast-2", "ap-northeast-3"),
}
# An MRSC global table holds three replicas, or two and a witness.
MRSC_REPLICAS = 3


class RegionPlanError(ValueError):
    """The regions cannot hold the lease table; the message says which rule they break."""


@dataclass(frozen=True)
class RegionPlan:
    """Where takt runs: every region of `regions` runs the stateless stack and holds a replica
    of every table; the first is the initial holder of the region lease and the home of the
    global tables' CloudFormation resources. `witness` is the lease table's MRSC witness when
    only two regions run takt."""

    regions: tuple[str, ...]
    witness: str | None = None

    @property
    def primary(self) -> str:
        return self.regions[0]

    @property
    def replicas(self) -> tuple[str, ...]:
        """The regions whose replicas the primary region's global tables create."""
        return self.regions[1:]

    @classmethod
    def parse(cls, regions: tuple[str, ...], witness: str | None) -> RegionPlan:
        """Check `regions` and `witness` against MRSC's rules; raise RegionPlanError."""
        if len(set(regions)) != len(regions):
            raise RegionPlanError(f"context 'regions' names a region twice: {','.join(regions)}")
        if len(regions) < 2:
            raise RegionPlanError(
                "context 'regions' needs two or three regions (leave it unset for one region)"
            )
        if len(regions) > MRSC_REPLICAS:
            raise RegionPlanError(
                f"context 'regions' may name at most {MRSC_REPLICAS} regions: the region lease "
                "is an MRSC global table, which holds three replicas at most"
            )
        every = (*regions, *([witness] if witness else []))
        if not any(set(every) <= set(members) for members in MRSC_REGION_SETS.values()):
            sets = "; ".join(f"{name}: {', '.join(m)}" for name, m in MRSC_REGION_SETS.items())
            raise RegionPlanError(
                "context 'regions' and 'witnessRegion' must all be in one of MRSC's region sets "
                f"({sets}), not {', '.join(every)}"
            )
        if len(regions) == MRSC_REPLICAS and witness:
            raise RegionPlanError(
                "context 'witnessRegion' is for two regions only: three regions are the lease "
                "table's three replicas"
            )
        if len(regions) < MRSC_REPLICAS and not witness:
            raise RegionPlanError(
                "context 'regions' with two regions needs 'witnessRegion', a third region of "
                "the same region set that holds the lease table's MRSC witness"
            )
        if witness in regions:
            raise RegionPlanError(
                f"context 'witnessRegion' ({witness}) must not be one of 'regions'"
            )
        return cls(regions=regions, witness=witness)
