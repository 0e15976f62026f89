"""The engines of streamjoin's join operator, by the join kind they run (`new_group`)."""

from __future__ import annotations

from streamjoin.operator.asof_join import AsofJoin
from streamjoin.operator.changelog_join import ChangelogJoin
from streamjoin.operator.group import GroupJoin, Spec
from streamjoin.operator.regular_join import RegularJoin
from streamjoin.operator.tvf_join import WindowFunctionJoin
from streamjoin.operator.window_join import WindowJoin
from streamjoin.plan.model import JoinKind

ENGINES: dict[JoinKind, type[GroupJoin]] = {
    JoinKind.STREAM_STREAM_WINDOW: WindowJoin,
    JoinKind.INTERVAL: WindowJoin,
    JoinKind.ASOF: AsofJoin,
    JoinKind.WINDOW_TVF: WindowFunctionJoin,
    JoinKind.CHANGELOG: ChangelogJoin,
    JoinKind.REGULAR: RegularJoin,
}


def new_group(spec: Spec) -> GroupJoin:
    return ENGINES[spec.kind](spec)
