"""Nexmark's join queries (q3, q8, q20) on files written from the published Nexmark model, the
same files for streamjoin and Flink, and their exact result counts.

The model is the one the Nexmark generators of Beam and Flink implement (NexmarkUtils /
GeneratorConfig): one event in 50 is a person, 3 are auctions, 46 are bids; person and auction
ids are sequential from 1000; an auction's seller is, 3 times in 4, the first of the latest
"hot" batch of 100 people, else one of the latest 1000 people (up to 10 ahead); a bid's auction
is, 1 time in 2, the first of the latest batch of 100 auctions, else one of the latest 100 (up
to 10 ahead), its bidder likewise among people (hot 3 times in 4); categories 10-14; states and
cities from Nexmark's lists. Events are 10,000 a second of event time (one every 0.1 ms,
`date_time` at ms precision), in event order. `extra` is empty (Nexmark pads it to a byte size;
both engines read the same files either way).

    person  (id, name, email_address, credit_card, city, state, date_time, extra)
    auction (id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra)
    bid     (auction, bidder, price, channel, url, date_time, extra)

The queries, as Nexmark (Flink's and RisingWave's editions) writes them:
- q3: auctions of category 10 with their seller, sellers in OR, ID or CA (a regular join);
- q8: people who opened an auction in the 10-second window they registered in (two tumbling
  window aggregations joined on the id and the window);
- q20: bids of category-10 auctions with their auction's columns (a regular join).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np

BASE = dt.datetime(2024, 1, 1)
TOTAL, PERSONS, AUCTIONS = 50, 1, 3  # proportions per 50 events (bids: the other 46)
FIRST_ID, FIRST_CATEGORY, CATEGORIES = 1000, 10, 5
HOT_SELLERS, HOT_AUCTIONS, HOT_BIDDERS = 4, 2, 4  # 1 in n is not hot
HOT_SELLER_RATIO = HOT_AUCTION_RATIO = HOT_BIDDER_RATIO = 100
ACTIVE_PEOPLE, PERSON_LEAD, IN_FLIGHT_AUCTIONS, AUCTION_LEAD = 1000, 10, 100, 10
EVENTS_PER_MS = 10
STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"]
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
QUERIES = ("q3", "q8", "q20")
READS = {"q3": ("person", "auction"), "q8": ("person", "auction"), "q20": ("auction", "bid")}
WINDOW_MS = 10_000  # q8's tumbling windows


def _tables(events: int, seed: int = 42) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    n = np.arange(events, dtype=np.int64)
    epoch, offset = n // TOTAL, n % TOTAL
    at_ms = n // EVENTS_PER_MS
    people = n[offset < PERSONS]
    auctions = n[(offset >= PERSONS) & (offset < PERSONS + AUCTIONS)]
    bids = n[offset >= PERSONS + AUCTIONS]

    def next_person(ids: np.ndarray) -> np.ndarray:  # one of the latest 1000 people, up to 10 ahead
        last = epoch[ids]  # the latest person's base-0 id (each epoch starts with a person)
        active = np.minimum(last + 1, ACTIVE_PEOPLE)
        return last + 1 - active + (rng.random(len(ids)) * (active + PERSON_LEAD)).astype(np.int64)

    def hot_or(ids: np.ndarray, ratio: int, hot: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.where(rng.integers(0, ratio, len(ids)) > 0, hot, other)

    person_ids = epoch[people]
    person = {
        "id": FIRST_ID + person_ids,
        "name": np.array([f"{FIRST_NAMES[i % 11]} {LAST_NAMES[i % 9]}" for i in rng.integers(0, 99, len(people))]),
        "email_address": np.array([f"user{i}@nexmark.com" for i in person_ids]),
        "credit_card": np.array([f"{i:04d} 0000 0000 0000" for i in rng.integers(0, 10_000, len(people))]),
        "city": np.array(CITIES)[rng.integers(0, len(CITIES), len(people))],
        "state": np.array(STATES)[rng.integers(0, len(STATES), len(people))],
        "date_time": at_ms[people],
    }
    seller = hot_or(auctions, HOT_SELLERS, epoch[auctions] // HOT_SELLER_RATIO * HOT_SELLER_RATIO, next_person(auctions))
    auction_ids = epoch[auctions] * AUCTIONS + (offset[auctions] - PERSONS)
    auction = {
        "id": FIRST_ID + auction_ids,
        "item_name": np.array([f"item {i}" for i in auction_ids]),
        "description": np.array([f"description of item {i}" for i in auction_ids]),
        "initial_bid": rng.integers(100, 10_000, len(auctions)),
        "reserve": rng.integers(10_000, 100_000, len(auctions)),
        "date_time": at_ms[auctions],
        "expires": at_ms[auctions] + rng.integers(1_000, 20_000, len(auctions)),
        "seller": FIRST_ID + seller,
        "category": FIRST_CATEGORY + rng.integers(0, CATEGORIES, len(auctions)),
    }
    last_auction = epoch[bids] * AUCTIONS + AUCTIONS - 1  # a bid comes after its epoch's auctions
    low = np.maximum(last_auction - IN_FLIGHT_AUCTIONS, 0)
    other = low + (rng.random(len(bids)) * (last_auction - low + 1 + AUCTION_LEAD)).astype(np.int64)
    bid_auction = hot_or(bids, HOT_AUCTIONS, last_auction // HOT_AUCTION_RATIO * HOT_AUCTION_RATIO, other)
    bidder = hot_or(bids, HOT_BIDDERS, epoch[bids] // HOT_BIDDER_RATIO * HOT_BIDDER_RATIO, next_person(bids))
    channel = rng.integers(0, len(CHANNELS), len(bids))
    bid = {
        "auction": FIRST_ID + bid_auction,
        "bidder": FIRST_ID + bidder,
        "price": rng.integers(100, 1_000_000, len(bids)),
        "channel": np.array(CHANNELS)[channel],
        "url": np.array([f"https://www.nexmark.com/{CHANNELS[c].lower()}/item.htm?query=1" for c in channel]),
        "date_time": at_ms[bids],
    }
    return {"person": person, "auction": auction, "bid": bid}


def _text(ms: int, seconds: dict) -> str:
    s = ms // 1000
    text = seconds.get(s)
    if text is None:
        text = seconds[s] = (BASE + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{ms % 1000:03d}"


def _write(path: Path, table: dict[str, np.ndarray]) -> None:
    """JSON Lines, columns in the table's order then `extra` (empty); times as SQL timestamps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names, seconds = list(table), {}
    columns = [table[c].tolist() for c in names]
    times = {i for i, c in enumerate(names) if c in ("date_time", "expires")}
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as out:
        for row in zip(*columns, strict=True):
            fields = [f'"{c}":"{_text(v, seconds)}"' if i in times else f'"{c}":{json.dumps(v)}'
                      for i, (c, v) in enumerate(zip(names, row, strict=True))]
            out.write("{" + ",".join(fields) + ',"extra":""}\n')
    tmp.rename(path)


def exact_counts(tables: dict[str, dict[str, np.ndarray]]) -> dict[str, int]:
    person, auction, bid = tables["person"], tables["auction"], tables["bid"]
    chosen = np.isin(person["state"], ["OR", "ID", "CA"])
    q3 = int(np.isin(auction["seller"][auction["category"] == 10], person["id"][chosen]).sum())
    q20 = int(np.isin(bid["auction"], auction["id"][auction["category"] == 10]).sum())
    # q8: a person (one group per id, name and window) whose window holds an auction they sell
    pairs = set(zip(auction["seller"].tolist(), (auction["date_time"] // WINDOW_MS).tolist(), strict=True))
    q8 = sum((i, w) in pairs for i, w in zip(person["id"].tolist(), (person["date_time"] // WINDOW_MS).tolist(), strict=True))
    return {"q3": q3, "q8": q8, "q20": q20}


def generate(root: Path, events: int) -> tuple[dict[str, Path], dict]:
    """The folders of person, auction and bid for `events` events (written once) and
    counts.json: each query's exact result rows and each stream's rows."""
    where = root / f"nexmark-{events}"
    done = where / "counts.json"
    if not done.exists():
        tables = _tables(events)
        for name, table in tables.items():
            _write(where / name / "part-0.json", table)
        counts = {**exact_counts(tables), "rows": {name: len(t["date_time"]) for name, t in tables.items()}}
        done.write_text(json.dumps(counts, indent=1))
    return {name: where / name for name in ("person", "auction", "bid")}, json.loads(done.read_text())


_PERSON = "id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR, state VARCHAR, date_time TIMESTAMP{t}, extra VARCHAR"
_AUCTION = ("id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP{t}, "
            "expires TIMESTAMP{t}, seller BIGINT, category BIGINT, extra VARCHAR")
_BID = "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP{t}, extra VARCHAR"
COLUMNS = {"person": _PERSON, "auction": _AUCTION, "bid": _BID}
WATERMARK = "WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND"
SELECT = {
    "q3": """SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')""",
    "q8": """SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM {tumble_person}
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM {tumble_auction}
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    "q20": """SELECT auction, bidder, price, channel, url, B.date_time AS date_time_b, B.extra AS extra_b,
       item_name, description, initial_bid, reserve, A.date_time AS date_time_a, expires, seller, category, A.extra AS extra_a
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10""",
}


def streamjoin_sql(query: str, dirs: dict[str, Path]) -> str:
    """The query in RisingWave's dialect (`--dialect risingwave`): sources of JSON files, the
    query as a materialized view (its rows to stdout)."""
    sources = "".join(
        f"CREATE SOURCE {name} ({COLUMNS[name].format(t='')}, {WATERMARK}) WITH (connector = 'files', "
        f"path = '{dirs[name]}') FORMAT PLAIN ENCODE JSON;\n" for name in READS[query])
    select = SELECT[query].format(tumble_person="TUMBLE(person, date_time, INTERVAL '10' SECOND)",
                                  tumble_auction="TUMBLE(auction, date_time, INTERVAL '10' SECOND)")
    return f"{sources}CREATE MATERIALIZED VIEW nexmark_{query} AS\n{select};\n"


def flink_sql(query: str, dirs: dict[str, Path]) -> tuple[list[str], str]:
    """Flink SQL: the tables (filesystem, JSON) and the query's SELECT."""
    tables = [f"CREATE TABLE {name} ({COLUMNS[name].format(t='(3)')}, {WATERMARK}) WITH ('connector' = 'filesystem', "
              f"'path' = '{dirs[name]}', 'format' = 'json')" for name in READS[query]]
    select = SELECT[query].format(
        tumble_person="TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND))",
        tumble_auction="TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND))")
    return tables, select
