"""How a hot minute splits as its items are written: its count writes and its partitions' sizes.

    .venv/bin/python bench/due_split.py --items 1000000 --shards 64

Drives the due store's own writer logic (`takt.store.due.SplitWriter`, the sampling, the thinning
and the split) over `--items` items of one minute, written one after another as one writer whose
cache always holds the stored count (the most up-to-date writer there can be), with the count kept
in memory. It prints the minute's final count and split, how many count writes it took, and how
many items the largest and the smallest partition hold: the items written before the minute split
stay in its lower shards, so its base shards hold more than its last sub-partitions. No AWS call is
made; the figures are arithmetic on the shipped hashing, so they are exact for these job ids.
"""

from __future__ import annotations

import argparse
from collections import Counter
from datetime import UTC, datetime

from takt.store.due import SplitWriter, shard_of, split_of

MINUTE = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=64, help="N, dueShards")
    parser.add_argument("--split-items", type=int, default=2000, help="dueSplitItems")
    parser.add_argument("--split-max", type=int, default=16, help="dueSplitMax")
    args = parser.parse_args()
    count = 0
    writes = 0

    def add(_minute: datetime, amount: int) -> int:
        nonlocal count, writes
        count += amount
        writes += 1
        return count

    def split(stored: int) -> int:
        return split_of(stored, args.shards, args.split_items, args.split_max)

    writer = SplitWriter(split, args.split_max, add, lambda _minute: count, lambda: 0.0)
    held: Counter[int] = Counter()
    for i in range(args.items):
        job_id = f"job{i:08d}"
        held[shard_of("t", job_id, args.shards * writer.split("t", job_id, MINUTE))] += 1
    sizes = sorted(held.values())
    print(
        f"N={args.shards} dueSplitItems={args.split_items} dueSplitMax={args.split_max}: "
        f"{args.items:,} items, count {count:,}, split {split(count)}, {writes:,} count writes "
        f"({writes / args.items:.4f} a due item); {len(held)} partitions holding "
        f"{sizes[0]:,} to {sizes[-1]:,} items"
    )


if __name__ == "__main__":
    main()
