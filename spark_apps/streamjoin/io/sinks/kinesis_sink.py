"""A query's rows into a Kinesis stream, as a Kinesis Analytics application's destination wrote
them (`run --output kinesis://STREAM?key=col`; docs/kinesis.md).

Each row is one record (PutRecords, 500 at a time, throttled records sent again): its data the
row as `run` writes it (one JSON object), its partition key the `key` column's value (else the
row's number in its release). Kinesis records carry no headers, so a release replayed after a
crash is recognised by its rows' bytes: before a release is sent, the instant is saved with its
name (`pending`, in the checkpoint); after every record is in, the release is saved as done. A
release up to the last done one is never sent again; a release pending at a crash is sent again
without the rows the stream received since that instant (the same bytes, counted: identical rows
stay as many as the release has; the destination stream is the application's own).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from streamjoin.faults import alive, armed_at, crash_point, generation
from streamjoin.io.sinks.release_log import ReleaseLog


class StreamWriter:
    """Writes releases into a Kinesis stream; `write`/`write_table` as io.sinks.writer.RowWriter."""

    appends = True  # a release sent cannot be rewritten: a replay must hold the same rows (OrderedSink)

    def __init__(self, target_url: str, state_dir: Path, suffix: str = ""):
        from streamjoin.io.sources.kinesis import client

        parts = urlsplit(target_url)
        self.stream = parts.netloc + parts.path
        if not self.stream:
            raise ValueError(f"output {target_url}: name the stream (kinesis://STREAM)")
        self.key = parse_qs(parts.query).get("key", [None])[0]
        self.suffix = suffix
        self.client = client()
        self.log = ReleaseLog(state_dir / f"kinesis-sink{suffix}.json")
        self._born = generation()  # (a crash harness's simulated kill: a killed run's writer sends nothing more)

    def write(self, name: str, rows: list[dict]) -> None:
        from streamjoin.io.formats.jsonlines import format_rows

        self._send(name, [line.rstrip("\n").encode() for line in format_rows(rows)],
                   [rows[n].get(self.key) if self.key else None for n in range(len(rows))])

    def write_table(self, name: str, table) -> None:
        from streamjoin.io.formats.jsonlines import format_lines

        lines = [v.as_py().rstrip("\n").encode() for chunk in format_lines(table) for v in chunk]
        keys = table.column(self.key).to_pylist() if self.key else [None] * table.num_rows
        self._send(name, lines, keys)

    def _send(self, name: str, datas: list[bytes], keys: list) -> None:
        if not datas:
            return
        alive(self._born)
        release = f"{name}{self.suffix}"
        if self.log.done(release):
            return  # sent before a restart: a replay
        pending = self.log.pending(release)
        there = self._records_since(pending["since"]) if pending is not None else Counter()
        if pending is None:
            self.log.begin(release, since=time.time() - 1)  # arrivals are the server's clock
        entries = []
        for n, (data, key) in enumerate(zip(datas, keys, strict=True)):
            if there[data]:
                there[data] -= 1  # in the stream already: sent before the crash
                continue
            entries.append({"Data": data, "PartitionKey": str(key) if key is not None else str(n)})
        chunks = [entries[i:i + 500] for i in range(0, len(entries), 500)]
        if armed_at("sink.inside_release") and len(chunks) == 1:  # the crash harness: half sent first
            chunks = [entries[:len(entries) // 2], entries[len(entries) // 2:]]
        for n, chunk in enumerate(chunks):
            if n == len(chunks) // 2:  # (armed, after the first half)
                crash_point("sink.inside_release")
            if chunk:
                self._put(chunk)
        self.log.finish(release)

    def _put(self, batch: list[dict]) -> None:
        delay = 0.1
        for _ in range(30):
            result = self.client.put_records(StreamName=self.stream, Records=batch)
            batch = [e for e, r in zip(batch, result["Records"], strict=True) if r.get("ErrorCode")]
            if not batch:
                return
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
        raise ConnectionError(f"kinesis {self.stream}: {len(batch)} records still throttled after 30 tries")

    def _shards(self) -> list[str]:
        shards, token = [], None
        while True:
            page = self.client.list_shards(**({"NextToken": token} if token else {"StreamName": self.stream}))
            shards += [s["ShardId"] for s in page.get("Shards", [])]
            token = page.get("NextToken")
            if not token:
                return shards

    def _records_since(self, since: float) -> Counter:
        """The data of every record that arrived at or after `since` (epoch seconds), all shards."""
        found: Counter = Counter()
        for shard in self._shards():
            iterator = self.client.get_shard_iterator(StreamName=self.stream, ShardId=shard, ShardIteratorType="AT_TIMESTAMP",
                                                      Timestamp=since)["ShardIterator"]
            while iterator:
                page = self.client.get_records(ShardIterator=iterator, Limit=10_000)
                found.update(r["Data"] for r in page.get("Records", []))
                if not page.get("Records") and not page.get("MillisBehindLatest"):
                    break
                iterator = page.get("NextShardIterator")
        return found
