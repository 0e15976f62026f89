"""SQL text -> logical plan (no Spark here): `compile_sql` analyses a file and applies the plan's
rewrites (`streamjoin.plan.rewrites`)."""

from streamjoin.plan.compile import compile_sql

__all__ = ["compile_sql"]
