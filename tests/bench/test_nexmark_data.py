"""The Nexmark data of `make bench` (bench/nexmark.py): the model's mix and references, and exact
counts that a plain row-by-row join of the same events agrees with (every run is judged by them)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import nexmark


def _rows(table: dict) -> list[dict]:
    names = list(table)
    return [dict(zip(names, values, strict=True)) for values in zip(*(table[n].tolist() for n in names), strict=True)]


def test_nexmark_events_follow_the_models_mix_and_reference_people_and_auctions_near_the_latest():
    tables = nexmark._tables(50_000)
    people, auctions, bids = (_rows(tables[n]) for n in ("person", "auction", "bid"))
    assert (len(people), len(auctions), len(bids)) == (1_000, 3_000, 46_000)
    assert [p["id"] for p in people] == list(range(1000, 2000))
    assert {a["category"] for a in auctions} == set(range(10, 15))
    # a seller is at most PERSON_LEAD people ahead of the latest person when the auction opens
    latest = {p["date_time"]: p["id"] for p in people}
    assert all(a["seller"] <= max(i for t, i in latest.items() if t <= a["date_time"]) + nexmark.PERSON_LEAD for a in auctions[:300])
    hot = Counter(b["auction"] for b in bids).most_common(1)[0][1]
    assert hot > 500, "half the bids go to the hot auction of the latest batch of 100 (15 a uniform auction)"


def test_nexmark_exact_counts_agree_with_a_plain_join_of_the_same_events():
    tables = nexmark._tables(40_000)
    people, auctions, bids = (_rows(tables[n]) for n in ("person", "auction", "bid"))
    by_id = {p["id"]: p for p in people}
    q3 = sum(1 for a in auctions if a["category"] == 10 and a["seller"] in by_id
             and by_id[a["seller"]]["state"] in ("OR", "ID", "CA"))
    category = {a["id"]: a["category"] for a in auctions}
    q20 = sum(1 for b in bids if category.get(b["auction"]) == 10)
    person_groups = {(p["id"], p["name"], p["date_time"] // 10_000) for p in people}
    auction_groups = {(a["seller"], a["date_time"] // 10_000) for a in auctions}
    q8 = sum(1 for i, _, w in person_groups if (i, w) in auction_groups)
    counts = nexmark.exact_counts(tables)
    assert counts == {"q3": q3, "q8": q8, "q20": q20}
    assert min(counts.values()) > 50, "each query has results to count"
