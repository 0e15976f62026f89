"""`${NAME}` / `${NAME:-default}` in option values and app paths come from the environment, so
one app's SQL and config run against different folders and servers. Standard library only: DAG
files use it while they are parsed."""

from __future__ import annotations

import os
import re


def expand(value: str | None) -> str | None:
    """The value with every `${NAME}` / `${NAME:-default}` replaced; ValueError names a missing one."""
    if value is None:
        return None

    def sub(match: re.Match) -> str:
        name, default = match.group(1), match.group(3)
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise ValueError(f"option value '{value}' needs the environment variable {name}")
        return default

    return re.sub(r"\$\{(\w+)(:-([^}]*))?\}", sub, value)
