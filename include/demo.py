"""`make demo`, for now: explain every seed query (tests/fixtures/seeds) and count the joins
by kind. Later issues turn this into the whole pipeline."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

from streamjoin.errors import SqlError
from streamjoin.plan import analyze, explain_text

SEEDS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seeds"


def main() -> int:
    kinds: collections.Counter[str] = collections.Counter()
    files = sorted(SEEDS.glob("*.sql"))
    for path in files:
        print(f"==> streamjoin explain {path.relative_to(SEEDS.parent.parent.parent)}")
        try:
            script = analyze(path.read_text(), str(path))
        except SqlError as error:
            print(error, file=sys.stderr)
            return 2
        print(explain_text(script))
        kinds.update(j.kind for q in script.queries for j in q.joins)
    print(f"explained {len(files)} seed files; joins by kind:")
    for kind, count in kinds.most_common():
        print(f"  {count:3d}  {kind}")
    print("try it on your own SQL: .venv/bin/streamjoin check FILE.sql; .venv/bin/streamjoin explain FILE.sql")
    return 0


if __name__ == "__main__":
    sys.exit(main())
