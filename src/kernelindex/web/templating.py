"""The site's Jinja environment, and its compiled templates kept on disk between processes.

Compiling every template (Jinja turns each into Python source, then compiles that) leaves a web
worker ~5 MiB larger for good: the compiler's short-lived objects fragment the heap. Loading the
same templates as stored bytecode costs ~0.4 MiB. So the environment uses Jinja's file bytecode
cache (its per-user folder in the temporary directory, mode 0700), and `kernelindex serve`'s master
loads every template (:func:`warm`, filling the cache the first time) before it forks its workers. Jinja keys each entry by template, and checks the
template's source checksum and the Python version on load: a changed template is compiled again.
Where the folder cannot be had or written, templates are compiled in memory, as without a cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
from starlette.templating import Jinja2Templates

from kernelindex import __version__
from kernelindex.views import formatting

TEMPLATES = Path(__file__).parent / "templates"


class _QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, except that a folder it cannot write or a damaged entry costs only time."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError, TypeError):  # unreadable or damaged: compile instead
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return _QuietBytecodeCache()
    except (OSError, RuntimeError):  # no safe per-user folder here
        return None


def templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates ship with the package: no stat() of each one on every render
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(
        ratio=formatting.format_ratio,
        day=formatting.format_date,
        short=formatting.short_digest,
        safe_url=formatting.safe_url,
        breakable=formatting.breakable,
        pretty_json=lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=False),
    )
    env.globals["version"] = __version__
    return Jinja2Templates(env=env)


def warm(env: jinja2.Environment) -> None:
    """Load every template into ``env``, compiling into the bytecode cache what is not there yet:
    `kernelindex serve --workers N` does it in the master, so its workers share the loaded templates
    (copy-on-write) instead of each loading them again on its first pages."""
    for name in env.list_templates():
        env.get_template(name)
