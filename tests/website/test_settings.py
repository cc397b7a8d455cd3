"""website/settings.py: what `make site` says about the repository its Colab buttons open."""

from __future__ import annotations

from website import settings


def test_the_note_names_the_repository_the_branch_where_it_was_set_and_how_to_change_it(monkeypatch):
    monkeypatch.delenv("NAMEDAXES_SITE_REPOSITORY", raising=False)
    monkeypatch.setattr(settings, "REPOSITORY", settings.DEFAULT_REPOSITORY)
    monkeypatch.setattr(settings, "BRANCH", "main")
    note = settings.colab_note()
    assert note == (
        "Colab buttons open the notebooks of https://github.com/namedaxes/jax-named-axes-course at branch main "
        "(the default in website/settings.py); a fork sets its own: make site "
        "NAMEDAXES_SITE_REPOSITORY=https://github.com/OWNER/NAME [NAMEDAXES_SITE_BRANCH=BRANCH]"
    )
    assert settings.colab_note("namedaxes/jax-named-axes-course") == note, "this checkout is the one the site opens"


def test_a_fork_is_warned_that_its_site_opens_another_repository(monkeypatch):
    monkeypatch.delenv("NAMEDAXES_SITE_REPOSITORY", raising=False)
    monkeypatch.setattr(settings, "REPOSITORY", settings.DEFAULT_REPOSITORY)
    note = settings.colab_note("someone/fork")
    assert note.splitlines()[1] == (
        "WARNING: this checkout's origin is github.com/someone/fork, but the site's Colab buttons open "
        "github.com/namedaxes/jax-named-axes-course: students of this site would open that repository's notebooks"
    )


def test_a_repository_set_for_make_site_is_named_as_set_there(monkeypatch):
    monkeypatch.setenv("NAMEDAXES_SITE_REPOSITORY", "https://github.com/someone/fork")
    monkeypatch.setattr(settings, "REPOSITORY", "https://github.com/someone/fork")
    monkeypatch.setattr(settings, "BRANCH", "course")
    note = settings.colab_note("someone/fork")
    assert note.startswith(
        "Colab buttons open the notebooks of https://github.com/someone/fork at branch course "
        "(set by NAMEDAXES_SITE_REPOSITORY)"
    )
    assert "WARNING" not in note


def test_the_chinese_colab_note_names_colabs_chinese_menu():
    """Issue 61: the Chinese note named Colab's English menu only; Colab in Chinese says 代码执行程序 ▸ 重启会话."""
    from website.site_text import TEXT

    zh = TEXT["colab_note"]["zh"]
    assert "*代码执行程序 ▸ 重启会话*" in zh and "Runtime ▸ Restart session" in zh
