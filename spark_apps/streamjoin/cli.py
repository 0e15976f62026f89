"""The `streamjoin` command line: check and explain a streaming-join SQL file.

Exit codes: 0 success, 2 rejected query (errors on stderr as FILE:LINE:COL: error: ...),
1 any other failure, with a one-line reason last on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamjoin.errors import SqlError

EXIT_OK, EXIT_FAILURE, EXIT_REJECTED = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streamjoin", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="parse and analyse a SQL file; exit 2 with errors if rejected")
    check.add_argument("file")
    explain = commands.add_parser("explain", help="show how each join of a SQL file runs")
    explain.add_argument("file")
    explain.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    try:
        return {"check": _check, "explain": _explain}[args.command](args)
    except SqlError as error:
        print(error, file=sys.stderr)
        return EXIT_REJECTED
    except Exception as error:  # the last line says why, for the operator and for tools
        print(f"streamjoin: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_FAILURE


def _load(path: str):
    from streamjoin.plan import analyze

    text = Path(path).read_text(encoding="utf-8") if path != "-" else sys.stdin.read()
    return analyze(text, path)


def _check(args) -> int:
    script = _load(args.file)
    queries = len(script.queries)
    joins = sum(len(q.joins) for q in script.queries)
    print(f"{args.file}: ok ({queries} quer{'y' if queries == 1 else 'ies'}, {joins} join{'s' * (joins != 1)})", file=sys.stderr)
    return EXIT_OK


def _explain(args) -> int:
    from streamjoin.plan import explain_json, explain_text

    script = _load(args.file)
    sys.stdout.write(explain_json(script) if args.format == "json" else explain_text(script))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
