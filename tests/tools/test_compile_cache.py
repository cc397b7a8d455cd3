"""tools/compile_cache.py: a fresh shared compile cache, named in the environment, gone afterwards."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

from tools import compile_cache


def test_the_environment_keeps_every_program_and_adds_its_warning_filter_to_the_callers():
    env = compile_cache.environment("/somewhere", {"PYTHONWARNINGS": "error::DeprecationWarning"})
    assert env["JAX_COMPILATION_CACHE_DIR"] == "/somewhere"
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    assert env["PYTHONWARNINGS"] == f"error::DeprecationWarning,ignore:{compile_cache.HALF_WRITTEN}"
    assert compile_cache.environment("/x", {})["PYTHONWARNINGS"] == f"ignore:{compile_cache.HALF_WRITTEN}"


def test_a_fresh_cache_is_named_meanwhile_then_removed_with_the_environment_as_it_was(monkeypatch):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", raising=False)
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    with compile_cache.shared("test-cache-"):
        folder = Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
        assert folder.is_dir() and folder.name.startswith("test-cache-") and not any(folder.iterdir())
        assert os.environ["PYTHONWARNINGS"] == f"default,ignore:{compile_cache.HALF_WRITTEN}"
    assert not folder.exists()
    assert "JAX_COMPILATION_CACHE_DIR" not in os.environ
    assert "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ
    assert os.environ["PYTHONWARNINGS"] == "default"


def test_the_callers_cache_is_shared_untouched(monkeypatch, tmp_path):
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path))
    before = dict(os.environ)
    with compile_cache.shared("test-cache-"):
        assert dict(os.environ) == before
    assert dict(os.environ) == before and tmp_path.is_dir()


def test_a_process_whose_jax_is_loaded_gets_the_same_options(monkeypatch, tmp_path):
    import jax

    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path))
    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    before = {name: getattr(jax.config, name) for name in names}
    try:
        compile_cache.configure_loaded_jax()
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
    finally:
        for name, value in before.items():
            jax.config.update(name, value)


def test_a_students_own_cache_is_closed_to_everyone_else(tmp_path):
    folder = tmp_path / "work" / ".jax-cache"
    env = compile_cache.private(folder, environ={})
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(folder)
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"  # every program kept, not only slow ones
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o777)  # a folder someone opened: closed again, another user could plant entries
    compile_cache.private(folder, environ={})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_the_hubs_students_each_get_a_cache_in_their_own_home(monkeypatch, tmp_path):
    """hub/jupyterhub_config.py, loaded as JupyterHub loads it: the server of each student names a cache in
    that student's home (mode 0700, hub/accounts.py), never a shared one."""
    from traitlets.config import Config

    from hub.deployment import ROOT

    monkeypatch.setenv("NAMEDAXES_HUB_DIR", str(tmp_path))
    config = Config()
    source = (ROOT / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    exec(
        compile(source, "jupyterhub_config.py", "exec"),
        {"get_config": lambda: config, "__file__": str(ROOT / "hub" / "jupyterhub_config.py")},
    )
    environment = config.Spawner.environment
    folders = {
        name: environment["JAX_COMPILATION_CACHE_DIR"](SimpleNamespace(user=SimpleNamespace(name=name), name=""))
        for name in ("ada", "bob")
    }
    assert folders == {name: f"{tmp_path}/home/{name}/.cache/namedaxes-jax" for name in ("ada", "bob")}
    assert (
        environment["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"](SimpleNamespace(user=SimpleNamespace(name="a"))) == "0"
    )
