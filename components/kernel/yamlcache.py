"""Parse a large, rarely changing YAML file (a carried CustomResourceDefinition) once per content
(:func:`load_yaml_cached`): the parsed document is kept as JSON in a cache folder
(:func:`cache_dir`) keyed by the SHA-256 of the file's bytes, so an edited or replaced file is a
new key. A folder that cannot be written, or an unreadable entry, costs only the YAML parse.
Why (measured): docs/sources.md#kernel-yamlcache
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

CACHE_ENV = "RAYGKE_CACHE_DIR"


def cache_dir() -> Path:
    """The cache folder, ``$RAYGKE_CACHE_DIR``, else ``$XDG_CACHE_HOME/raygke``, else
    ``~/.cache/raygke`` (the XDG Base Directory convention,
    https://specifications.freedesktop.org/basedir-spec/latest/); not created here."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "raygke"


def load_yaml_cached(data: bytes) -> Any:
    """The YAML document ``data`` (one document, JSON-compatible), parsed once per content.

    Returns a fresh object each call; callers may mutate it.

    Raises:
        yaml.YAMLError: ``data`` is not YAML (nothing is cached then).
    """
    entry = cache_dir() / "yaml" / f"{hashlib.sha256(data).hexdigest()}.json"
    try:
        return json.loads(entry.read_bytes())
    except (OSError, ValueError):
        pass
    doc = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    try:
        text = json.dumps(doc, separators=(",", ":"))
    except (TypeError, ValueError):  # a date or a non-string key: not JSON, not cached
        return doc
    if json.loads(text) != doc:  # e.g. integer keys that JSON would turn into strings
        return doc
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, entry)  # atomic: a concurrent reader sees the old state or the whole file
    except OSError:
        pass
    return doc
