"""An input's files: which are new (a folder's files or an s3:// prefix's objects not read before,
in name order, those a `pattern` names), and which changed after they were read (issue 43).

A file is read once, by name, so a generator that writes a name again would lose its rows with no
word. The stager records each local file's size and modification time when it reads it; a file
that differs later becomes a dead letter that names it and says what changed (its new content is
not read)."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

from streamjoin.io.sources.rejects import dead_letter


def new_files(root: Path, seen: set[str], pattern: str | None) -> list[str]:
    """The files of the folder `root` not in `seen` (by name), non-empty, not hidden (`.`, `_`),
    whose whole name `pattern` matches (None: any), as paths in name order."""
    if not root.exists():
        return []
    wanted = re.compile(pattern) if pattern else None
    names = []
    with os.scandir(root) as entries:  # (a file read before costs its name only, not a stat: a live folder grows)
        for e in entries:
            if not e.name.startswith((".", "_")) and e.name not in seen and (wanted is None or wanted.fullmatch(e.name)) \
                    and e.is_file() and e.stat().st_size > 0:
                names.append(e.name)
    return [str(root / n) for n in sorted(names)]


def folder_bytes(root: Path) -> int:
    """The bytes of the files `new_files` would read from the folder `root` (0 if there is none)."""
    return sum(os.path.getsize(root / name) for name in new_files(root, set(), None)) if root.is_dir() else 0


def new_objects(filesystem, path: str, seen: set[str], pattern: str | None) -> list[str]:
    """The objects directly under the s3:// prefix `path` not in `seen`, as full `s3://bucket/key`
    paths in key order (non-empty, not hidden, matching `pattern`)."""
    from pyarrow import fs

    from streamjoin.io.storage import s3

    bucket, prefix = s3.split(path)
    listing = filesystem.get_file_info(fs.FileSelector(f"{bucket}/{prefix}".rstrip("/"), allow_not_found=True))
    keys = (f"s3://{i.path}" for i in listing if i.type == fs.FileType.File and i.size)
    wanted = re.compile(pattern) if pattern else None
    return sorted(k for k in keys if not k.rsplit("/", 1)[-1].startswith((".", "_")) and k not in seen
                  and (wanted is None or wanted.fullmatch(k.rsplit("/", 1)[-1])))


def size_and_time(path) -> list[int]:
    """[size in bytes, modification time in ns]: what `read_as` records of a file when it is read."""
    info = os.stat(path)
    return [info.st_size, info.st_mtime_ns]


def dead_letters(alias: str, root: Path, read_as: dict) -> list[dict]:
    """A dead letter for each file of `read_as` (name -> [size, mtime_ns] when read) that changed
    since; `read_as` is updated to what each is now, so a change is reported once."""
    records = []
    for name, was in read_as.items():
        path = root / name
        now = size_and_time(path) if path.is_file() else None
        if now is None or list(now) == list(was):
            continue
        reason = (f"the file changed after it was read (was {was[0]} bytes, modified {_when(was[1])}; now "
                  f"{now[0]} bytes, modified {_when(now[1])}): a file is read once, by name, so its new "
                  "content is not read; write new input under a new name")
        records.append(dead_letter(alias, str(path), None, None, reason))
        read_as[name] = now
    return records


def _when(mtime_ns: int) -> str:
    return dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC).isoformat(timespec="seconds")
