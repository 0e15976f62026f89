"""Fill the app's inputs with the reference app's generated data: the city table (CITY_INFO_PATH)
and the sales, put into the Kinesis stream (KDA_SALES_STREAM, created with 2 shards if missing) in
arrival order, late rows last; the endpoint is the AWS_* variables' (`streamjoin s3 serve`).

    python include/apps/hourly_city_sales_kda/load.py --out data/hourly_city_sales_kda --hours 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "hourly_city_sales"))
from generate import Generated, generate  # noqa: E402


def load(out: Path, stream: str | None = None, shards: int = 2, **generator) -> Generated:
    """Generate into `out/incoming`, move the city table to `out/city_info` (the reference app's
    city table: point CITY_INFO_PATH there), put the sales."""
    from streamjoin.io.sources.kinesis import put

    shutil.rmtree(out / "incoming", ignore_errors=True)
    g = generate(out / "incoming", write_late=True, **generator)
    shutil.rmtree(out / "city_info", ignore_errors=True)
    shutil.move(out / "incoming" / "city_info", out / "city_info")
    lines = [line.encode() for f in g.files for line in f.read_text().splitlines()]
    put(stream or os.environ.get("KDA_SALES_STREAM", "hourly-city-sales"), lines, key="city", shards=shards)
    return g


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("data/hourly_city_sales_kda"))
    parser.add_argument("--hours", type=int, default=5)
    args = parser.parse_args()
    g = load(args.out, hours=args.hours)
    print(json.dumps({"sales": len(g.sales), "late": len(g.late), "cities": len(g.cities)}))


if __name__ == "__main__":
    main()
