"""The columns the engine's frames and files carry beside the user's: each row's rowtime (as Spark
sees it: `__rowtime`) and, on a changelog, its operation (`op`: +I or -D). The lowering makes them,
the sinks read them."""

ROWTIME_COLUMN = "__rowtime"
OP = "op"  # the changelog's column (EMIT CHANGES): +I or -D
