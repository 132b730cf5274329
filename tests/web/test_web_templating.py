"""Compiled templates kept on disk: `warm` fills the cache, a worker renders the same page from the
stored bytecode, and damaged entries or a folder that cannot be written cost nothing but time."""

from __future__ import annotations

import os
import random
import tempfile

import pytest

from kernelindex.web import templating


@pytest.fixture()
def temp_dir(tmp_path, monkeypatch):
    """Jinja's per-user cache folder, inside this test's own temporary folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"_jinja2-cache-{os.getuid()}"


def render_all(env, context) -> dict[str, str]:
    return {name: env.get_template(name).render(**context) for name in ("llms.txt", "_macros.html")}


def test_pages_render_the_same_from_stored_bytecode(temp_dir):
    context = {"version": f"v{random.randrange(10**6)}"}
    templating.warm(templating.templates().env)
    names = templating.templates().env.list_templates()
    assert len(list(temp_dir.iterdir())) == len(names)  # one entry per template
    from_disk = render_all(templating.templates().env, context)
    assert from_disk == render_all(templating.templates().env.overlay(bytecode_cache=None), context)
    assert context["version"] in from_disk["llms.txt"]

    for entry in temp_dir.iterdir():  # damaged entries: compiled again, same pages
        entry.write_bytes(random.randbytes(random.randrange(1, 64)))
    assert render_all(templating.templates().env, context) == from_disk


def test_a_folder_that_cannot_be_written_costs_only_time(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    env = templating.templates().env
    env.bytecode_cache = templating._QuietBytecodeCache(str(blocked))
    plain = templating.templates().env.overlay(bytecode_cache=None)
    assert render_all(env, {}) == render_all(plain, {})
