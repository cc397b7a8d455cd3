"""tools/system_deps.py: one table of the system packages the course needs, one installer for all of them."""

from __future__ import annotations

import pytest

from tools import system_deps
from tools.system_deps import Need


def _need(present: bool, required: bool = False) -> Need:
    return Need("thing", "debian-thing", "what it is for", lambda: present, "what is lost", required=required)


class Apt:
    """apt-get as `_apt_install` calls it: the package lists asked for, in order; it has only `available`, and
    what it installs is then present (`installed`)."""

    def __init__(self, available: set[str]):
        self.available, self.calls, self.installed = available, [], set()

    def __call__(self, packages: list[str]) -> bool:
        self.calls.append(packages)
        if not set(packages) <= self.available:
            return False
        self.installed |= set(packages)
        return True

    def need(self, package: str) -> Need:
        return Need(package, package, "for the test", lambda: package in self.installed, f"no {package}")


def test_every_row_says_what_which_package_why_and_what_is_lost():
    rows = [need for group in system_deps.NEEDS.values() for need in group]
    assert {"fonts-wqy-microhei", "bubblewrap", "libseccomp2", "chromium", "nodejs npm"} <= {n.package for n in rows}
    assert all(n.what and n.package and n.why and n.without for n in rows)
    assert [n.required for n in system_deps.NEEDS["hub"]] == [True], "the hub cannot start without Node.js"


def test_a_present_package_costs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(system_deps, "_apt_install", lambda packages: pytest.fail("apt-get ran"))
    assert system_deps.install([_need(present=True)])
    assert capsys.readouterr().out == ""


def test_a_dry_run_says_what_it_would_install_and_installs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(system_deps, "_apt_install", lambda packages: pytest.fail("apt-get ran"))
    assert system_deps.install([_need(present=False)], dry_run=True)
    assert capsys.readouterr().out == "would install Debian's debian-thing (what it is for)\n"


def test_an_impossible_install_warns_loudly_or_stops_when_required(monkeypatch, capsys):
    tried = []
    monkeypatch.setattr(system_deps, "_apt_install", lambda packages: tried.append(packages) or False)
    monkeypatch.setattr(system_deps.os, "geteuid", lambda: 1000)
    assert system_deps.install([_need(present=False)])
    out = capsys.readouterr().out
    assert "Installing Debian's thing (what it is for)..." in out
    assert "WARNING: could not install thing (not root: apt-get needs root): what is lost" in out
    assert not system_deps.install([_need(present=False, required=True)])
    err = capsys.readouterr().err
    assert "could not install thing with apt-get (not root: apt-get needs root): what is lost" in err
    assert tried == [["debian-thing"], ["debian-thing"]]


def test_the_hub_needs_root_and_its_tests_skip_without(monkeypatch, capsys):
    monkeypatch.setattr(system_deps.os, "geteuid", lambda: 1000)
    assert system_deps.main(["hub"]) == 1
    assert "make hub needs root" in capsys.readouterr().err
    assert system_deps.main(["hub-test"]) == 0
    assert "NOTE: not root: the JupyterHub tests (real Unix accounts) will be skipped" in capsys.readouterr().out


def test_every_missing_debian_package_goes_in_one_apt_get_call(monkeypatch, capsys):
    apt = Apt(available={"a", "b", "c"})
    monkeypatch.setattr(system_deps, "_apt_install", apt)
    assert system_deps.install([apt.need("a"), apt.need("b"), _need(present=True), apt.need("c")])
    assert apt.calls == [["a", "b", "c"]]
    assert capsys.readouterr().out.count("Installing Debian's") == 3


def test_a_package_apt_get_cannot_have_costs_no_other(monkeypatch, capsys):
    apt = Apt(available={"a", "c"})
    monkeypatch.setattr(system_deps, "_apt_install", apt)
    assert system_deps.install([apt.need("a"), apt.need("missing"), apt.need("c")])
    assert apt.calls == [["a", "missing", "c"], ["a"], ["missing"], ["c"]]
    assert apt.installed == {"a", "c"}
    assert "WARNING: could not install missing" in capsys.readouterr().out


def test_the_groups_of_make_test_are_one_install(monkeypatch):
    asked = []
    monkeypatch.setattr(system_deps, "install", lambda needs, dry_run: asked.append(list(needs)) or True)
    monkeypatch.setattr(system_deps.os, "geteuid", lambda: 0)
    assert system_deps.main(["fonts", "grading", "browser", "hub-test"]) == 0
    groups = ("fonts", "grading", "browser", "hub")
    assert asked == [[need for group in groups for need in system_deps.NEEDS[group]]]


def test_an_npm_lock_is_installed_after_the_debian_packages_that_bring_npm(monkeypatch):
    apt = Apt(available={"nodejs", "npm"})
    ran = []
    monkeypatch.setattr(system_deps, "_apt_install", lambda packages: ran.append("apt") or apt(packages))
    monkeypatch.setattr(system_deps, "_npm_install", lambda folder: ran.append(f"npm ci {folder}") or True)
    lock = Need("axe", "npm:tests/browser/axe", "for the test", lambda: "npm ci tests/browser/axe" in ran, "no axe")
    assert system_deps.install([lock, apt.need("nodejs"), apt.need("npm")])
    assert ran == ["apt", "npm ci tests/browser/axe"]
    assert apt.calls == [["nodejs", "npm"]]
