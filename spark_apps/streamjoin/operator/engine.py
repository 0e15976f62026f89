"""The engines of streamjoin's join operator, by the join kind they run (`new_group`); a chain of
regular joins runs on `regular_chain`."""

from __future__ import annotations

from streamjoin.operator.asof_join import AsofJoin
from streamjoin.operator.changelog_join import ChangelogJoin
from streamjoin.operator.group import Condition, GroupJoin, Spec
from streamjoin.operator.regular_chain import ChainCondition, ChainSpec, RegularChain
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


def new_group(spec: Spec | ChainSpec) -> GroupJoin:
    if isinstance(spec, ChainSpec):
        return RegularChain(spec)
    return ENGINES[spec.kind](spec)


def new_condition(spec: Spec | ChainSpec) -> Condition | ChainCondition:
    """The join condition compiled to Python (a chain: each of its joins')."""
    return ChainCondition(spec) if isinstance(spec, ChainSpec) else Condition(spec)
