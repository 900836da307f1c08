"""Where rsep keeps what it builds once and reads at every start (the parsers, the code of
dataclasses' methods, rsep.lang.parser and rsep.cli.start): ``$RSEP_CACHE_DIR``, else the
user's cache directory. It imports nothing of rsep's, as the command reads it first."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$RSEP_CACHE_DIR``, else ``$XDG_CACHE_HOME/rsep``, else ``~/.cache/rsep``."""
    if os.environ.get("RSEP_CACHE_DIR"):
        return Path(os.environ["RSEP_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rsep"


def write_atomically(path: Path, data: bytes) -> bool:
    """Writes ``path`` beside and renames it into place, so that a concurrent start reads
    all of it or none; False (and nothing left behind) where it cannot be written."""
    import tempfile  # here: most starts write nothing

    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
