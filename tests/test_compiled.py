"""The compiled modules (mutagrad._compiled): the same package with or without them.

The whole suite runs compiled in ``make test`` and ``make test-newest`` and in
plain Python in ``make test-oldest`` (MUTAGRAD_PURE=1); these tests check the
switch itself: what loads, when a compiled copy is passed over, and that the
modules whose proofs read the interpreter's frames and reference counts are
never compiled.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mutagrad
from mutagrad import _compiled

SRC = Path(mutagrad.__file__).parent.parent
COMPILED_HERE = any(_compiled.loaded().values())


def _loaded_in_subprocess(src: Path, env: dict[str, str]) -> dict[str, bool]:
    program = textwrap.dedent(
        f"""
        import sys, json
        sys.path.insert(0, {str(src)!r})
        import mutagrad, numpy as np
        from mutagrad import _compiled
        for name in _compiled.MODULES:
            __import__(name)
        g, = mutagrad.gradient(lambda x: np.sum(x[1:] * x[:-1]), np.arange(4.0))
        assert g.tolist() == [1.0, 2.0, 4.0, 2.0], g
        print(json.dumps(_compiled.loaded()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", program], env={**os.environ, **env},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_listed_module_is_a_source_file_of_the_package():
    for name in _compiled.MODULES:
        assert os.path.exists(_compiled.source_path(name)), name


def test_the_modules_that_read_frames_and_reference_counts_are_never_compiled():
    # Their proofs are calibrated on interpreted frames (see mutagrad._compiled).
    for name in ("freezing", "traced.elision", "diagnostics.tracebacks", "traced.value", "errors"):
        assert f"mutagrad.{name}" not in _compiled.MODULES


def test_mutagrad_pure_loads_every_module_from_its_source():
    loaded = _loaded_in_subprocess(SRC, {"MUTAGRAD_PURE": "1"})
    assert set(loaded) == set(_compiled.MODULES)
    assert not any(loaded.values())


@pytest.mark.skipif(not COMPILED_HERE, reason="no module is compiled in this environment")
def test_a_compiled_module_whose_source_changed_since_the_build_loads_its_source(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(SRC / "mutagrad", copy / "mutagrad",
                    ignore=shutil.ignore_patterns("__pycache__", "*.c"))  # fmt: skip
    loaded = _loaded_in_subprocess(copy, {"MUTAGRAD_PURE": ""})
    compiled = {name for name, c in loaded.items() if c}
    assert compiled, "the copy's compiled modules did not load"
    edited = sorted(compiled)[0]
    source = Path(_compiled.source_path(edited).replace(str(SRC), str(copy)))
    before = source.stat()
    source.write_text(source.read_text() + "# edited after the build\n")
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))  # (its old time: digests)
    loaded = _loaded_in_subprocess(copy, {"MUTAGRAD_PURE": ""})
    assert loaded[edited] is False
    assert {name for name, c in loaded.items() if c} == compiled - {edited}


@pytest.mark.skipif(not COMPILED_HERE, reason="no module is compiled in this environment")
def test_compiled_modules_without_the_builds_record_load_their_sources(tmp_path):
    copy = tmp_path / "src"
    left_out = shutil.ignore_patterns("__pycache__", "*.c", _compiled.RECORD)
    shutil.copytree(SRC / "mutagrad", copy / "mutagrad", ignore=left_out)
    assert not any(_loaded_in_subprocess(copy, {"MUTAGRAD_PURE": ""}).values())
