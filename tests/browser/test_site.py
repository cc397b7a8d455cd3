"""The course website (`make site`), checked on the built files and in Debian's Chromium.

The site is built once per test session by the real command, `make site` (a cached build
executes nothing and renders nothing, so after the first build this costs seconds), and served
from build/site/ by a static file server on the loopback interface, as GitHub Pages would serve
it. Every page of both editions is opened: no console error, no failed request, every picture
loaded (as many as the page's notebook has image outputs), every formula typeset, every internal
link and anchor resolves, the language switch names the same page of the other edition, the Colab
button opens that notebook of that edition from the repository. The pages hold no solution code
and no hidden test, proved line by line for every exercise. Screenshots (landing page, a notebook
page in each language, a phone-sized page) go to build/screenshots/site-*.png.
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import string
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import nbformat
import pytest

from website import settings
from website.site_text import TEXT

ROOT = Path(__file__).resolve().parents[2]

SITE = settings.OUT
CJK_FONTS = re.compile(r"WenQuanYi|Noto Sans CJK|Noto Sans SC|Source Han|PingFang|Hiragino|YaHei|Droid Sans Fallback")
PHONE = {"width": 390, "height": 844}
SAMPLE = "02_scaled_sum"  # the notebook page of the screenshots


def _no_make_jobserver() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


MAKE_SITE_SAID: list[str] = []  # what `make site` printed (the session's one build)


@pytest.fixture(scope="session")
def built_site() -> Path:
    """`make site`, once per session (cached: seconds when nothing changed)."""
    out = subprocess.run(
        ["make", "--no-print-directory", "site"],
        cwd=ROOT,
        env=_no_make_jobserver(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, f"`make site` failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    MAKE_SITE_SAID.append(out.stdout)
    return SITE


@pytest.fixture(scope="session")
def site_url(built_site):
    """build/site/ served over HTTP on 127.0.0.1 (a static file server, as GitHub Pages)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _pages(site: Path) -> list[str]:
    """The site's pages (not the theme's template fragments under _static/)."""
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
    )


def _edition_of(page: str) -> tuple[str, str]:
    """(edition, pagename) of a page path such as zh/notebooks/02_scaled_sum.html."""
    if page.startswith("zh/"):
        return "zh", page[3:-5]
    return "en", page[:-5]


def _page_text(path: Path) -> str:
    """The text a reader sees in a page (tags removed, entities decoded; scripts and styles dropped)."""
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


# ---------------------------------------------------------------- no answers in the pages
def _marked_lines(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def _exercises(edition: str, notebook_id: str):
    """(grade id, solution lines, hidden-test lines, visible lines) of each exercise cell of the solution."""
    solution = nbformat.read(settings.folder(settings.SOLUTIONS, edition) / f"{notebook_id}.ipynb", as_version=4)
    release = nbformat.read(settings.folder(settings.RELEASE, edition) / f"{notebook_id}.ipynb", as_version=4)
    release_text = "\n".join(cell.source for cell in release.cells)
    for cell in solution.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not (meta.get("solution") or meta.get("grade")):
            continue
        secret = _marked_lines(cell.source, "BEGIN SOLUTION", "END SOLUTION")
        hidden = _marked_lines(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
        visible = [ln.strip() for ln in cell.source.split("### BEGIN")[0].splitlines() if ln.strip()]
        # a secret line that the student's notebook also holds (elsewhere) is no secret
        yield (
            meta["grade_id"],
            [ln for ln in secret if ln not in release_text],
            [ln for ln in hidden if ln not in release_text],
            visible,
        )


@pytest.mark.parametrize("edition", list(settings.EDITIONS))
def test_pages_hold_no_solution_code_and_no_hidden_test(built_site, edition):
    checked = 0
    for notebook_id in settings.notebook_ids():
        page = settings.folder(built_site, edition) / "notebooks" / f"{notebook_id}.html"
        text = _page_text(page)
        exercises = list(_exercises(edition, notebook_id))
        assert exercises, f"{notebook_id} has no exercise cells: nothing was checked"
        for grade_id, secret, hidden, visible in exercises:
            leaked = [ln for ln in secret + hidden if ln in text]
            assert not leaked, f"{page.relative_to(ROOT)} shows lines of {grade_id}'s solution or hidden test: {leaked}"
            # the page does show what the student sees of the same cell (the comparison can find lines)
            missing = [ln for ln in visible if ln not in text]
            assert not missing, f"{page.relative_to(ROOT)}: the student's lines of {grade_id} are missing: {missing}"
            checked += 1
        assert "raise NotImplementedError()" in text, f"{page.relative_to(ROOT)}: no answer stub on the page"
    raw = "\n".join(p.read_text(encoding="utf-8") for p in settings.folder(built_site, edition).rglob("*.html"))
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in raw, f"an nbgrader marker {marker!r} is in the {edition} pages"
    assert checked >= 2 * len(settings.notebook_ids())


def test_the_site_texts_have_both_editions_with_the_same_placeholders():
    for key, editions in TEXT.items():
        assert set(editions) == set(settings.EDITIONS), f"TEXT[{key!r}] has {sorted(editions)}"
        fields = {e: {f for _, f, _, _ in string.Formatter().parse(v) if f} for e, v in editions.items()}
        assert len({frozenset(f) for f in fields.values()}) == 1, f"TEXT[{key!r}] placeholders differ: {fields}"


def test_a_second_make_site_reuses_everything(built_site):
    cached = sorted((p, p.stat().st_mtime_ns) for p in settings.CACHE.rglob("*.ipynb"))
    pages = sorted((p, p.stat().st_mtime_ns) for p in built_site.rglob("*.html"))
    out = subprocess.run(
        ["make", "--no-print-directory", "site"],
        cwd=ROOT,
        env=_no_make_jobserver(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "up to date" in out.stdout and "Executing" not in out.stdout and "Rendering" not in out.stdout, out.stdout
    assert sorted((p, p.stat().st_mtime_ns) for p in settings.CACHE.rglob("*.ipynb")) == cached
    assert sorted((p, p.stat().st_mtime_ns) for p in built_site.rglob("*.html")) == pages
    assert len(cached) == len(settings.EDITIONS) * len(settings.notebook_ids())


def test_the_site_is_ready_for_github_pages(built_site):
    assert (built_site / ".nojekyll").exists()
    for page in _pages(built_site):
        raw = (built_site / page).read_text(encoding="utf-8")
        absolute = re.findall(r'(?:href|src)="(/[^"]*)"', raw)
        assert not absolute, f"{page} links from the server's root (breaks under a Pages project path): {absolute[:3]}"
        machine = [str(ROOT), sys.base_prefix, str(Path.home()) + "/"]
        assert not [p for p in machine if p in raw], f"{page} names a path of the build machine"


# ---------------------------------------------------------------- in the browser
def _image_outputs(edition: str, notebook_id: str) -> int:
    nb = nbformat.read(settings.SOURCES / edition / "notebooks" / f"{notebook_id}.ipynb", as_version=4)
    return sum(
        1
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if any(mime.startswith("image/") for mime in out.get("data", {}))
    )


def _ids(path: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8")))


def _open(page, url: str) -> list[str]:
    """Go to `url`; return what went wrong while it loaded (console errors, page errors, failed requests)."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="load")
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    return problems


def test_every_page_loads_cleanly_with_its_figures_math_links_switch_and_colab(built_site, site_url, browser):
    pages = _pages(built_site)
    notebook_pages = [p for p in pages if "/notebooks/" in f"/{p}"]
    assert len(notebook_pages) == len(settings.EDITIONS) * len(settings.notebook_ids())
    owner_repo = settings.github_path()
    page = browser.new_page()
    for rel in pages:
        edition, pagename = _edition_of(rel)
        problems = _open(page, site_url + rel)
        assert not problems, f"{rel}: {problems}"
        assert page.evaluate("document.documentElement.lang").startswith(settings.EDITIONS[edition][0][:2]), rel
        # pictures: all loaded, and every image output of the notebook is on its page
        images = page.evaluate("[...document.querySelectorAll('img')].map(i => [i.currentSrc, i.naturalWidth])")
        assert all(width > 0 for _, width in images), f"{rel}: images that did not load: {images}"
        if rel in notebook_pages:
            notebook_id = pagename.split("/")[-1]
            shown = page.evaluate("document.querySelectorAll('div.cell_output img').length")
            assert shown == _image_outputs(edition, notebook_id), f"{rel}: {shown} figures shown"
        # math: every formula typeset by MathJax (served by the site itself)
        math = page.evaluate(
            "[document.querySelectorAll('.math').length, "
            "document.querySelectorAll('.math mjx-container, mjx-container.MathJax').length]"
        )
        assert math[1] >= math[0], f"{rel}: {math[0]} formulas, {math[1]} typeset"
        # internal links and their anchors
        for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
            if not href.startswith(site_url):
                continue
            parsed = urllib.parse.urlparse(href)
            target = built_site / urllib.parse.unquote(parsed.path[len(urllib.parse.urlparse(site_url).path) :])
            if target.is_dir():
                target = target / "index.html"
            assert target.is_file(), f"{rel} links to {href}: no such file"
            if parsed.fragment and target.suffix == ".html":
                assert urllib.parse.unquote(parsed.fragment) in _ids(target), f"{rel} links to {href}: no such anchor"
        # the language switch names the same page in the other edition
        switch = page.locator("a.site-language-switch")
        assert switch.count() == 1, f"{rel}: {switch.count()} language switches"
        other = next(e for e in settings.EDITIONS if e != edition)
        expected = settings.folder(Path(""), other) / f"{pagename}.html"
        assert switch.evaluate("a => a.href") == site_url + expected.as_posix(), rel
        # the Colab button opens this notebook of this edition from the repository
        colab = page.locator("a.site-colab")
        if rel in notebook_pages:
            assert colab.count() == 1, f"{rel}: {colab.count()} Colab buttons"
            url = colab.get_attribute("href")
            m = re.fullmatch(
                r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/(notebooks/.+\.ipynb)", url
            )
            assert m, f"{rel}: not a Colab URL of a GitHub notebook: {url}"
            assert m.group(1) == owner_repo and m.group(2) == settings.BRANCH, url
            assert (
                m.group(3)
                == (settings.folder(Path("notebooks"), edition) / f"{pagename.split('/')[-1]}.ipynb").as_posix()
            )
            assert (ROOT / m.group(3)).is_file(), f"{url} opens a notebook the repository does not have"
        else:
            assert colab.count() == 0, rel


def test_the_language_switch_lands_on_the_same_notebook(built_site, site_url, browser):
    page = browser.new_page()
    _open(page, site_url + f"notebooks/{SAMPLE}.html")
    page.locator("a.site-language-switch").click()
    page.wait_for_load_state("load")
    assert page.url == site_url + f"zh/notebooks/{SAMPLE}.html"
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    assert page.locator("h1").first.inner_text().startswith(SAMPLE[:2])
    page.locator("a.site-language-switch").click()
    page.wait_for_load_state("load")
    assert page.url == site_url + f"notebooks/{SAMPLE}.html"


def test_chinese_text_gets_a_cjk_font_and_search_finds_pages(built_site, site_url, browser):
    page = browser.new_page()
    _open(page, site_url + f"zh/notebooks/{SAMPLE}.html")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]
    node = cdp.send("DOM.querySelector", {"nodeId": root["nodeId"], "selector": "article p"})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    assert any(CJK_FONTS.search(f["familyName"]) for f in fonts), f"Chinese text drawn with {fonts}"
    for prefix in ("", "zh/"):
        _open(page, site_url + f"{prefix}search.html?q=psum")
        page.wait_for_selector("#search-results ul.search li", timeout=15000)
        assert page.locator("#search-results ul.search li a").count() >= 3, f"{prefix}search.html found too little"


@pytest.mark.parametrize("term", ["集合通信", "设备", "轴名称"])
def test_chinese_search_finds_chinese_terms_on_the_pages_that_use_them(built_site, site_url, browser, term):
    """A Chinese word alone, with no Latin text around it, finds the pages whose text uses it (jieba segments
    the index, website/conf.py; the search used to find Chinese only between Latin words)."""

    def article(path: Path) -> str:  # the page's own text, not the navigation every page repeats
        raw = path.read_text(encoding="utf-8")
        body = re.search(r'(?s)<article class="bd-article">(.*)</article>', raw)
        return html.unescape(re.sub(r"<[^>]+>", "", body.group(1))) if body else ""

    using = {p[3:-5] for p in _pages(built_site) if p.startswith("zh/") and term in article(built_site / p)}
    assert len(using) >= 2, f"the Chinese pages that use {term}: {using}"
    page = browser.new_page()
    _open(page, site_url + f"zh/search.html?q={urllib.parse.quote(term)}")
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    # the search has finished listing its pages once Sphinx writes its summary ("Search finished, found N
    # pages"; `_finishSearch`, after the last item): "#search-progress" says "Preparing search..." from the start
    page.wait_for_function(
        "() => (document.querySelector('#search-results p.search-summary') || {}).textContent",
        timeout=15000,
    )
    found = {
        urllib.parse.urlsplit(href).path.split("zh/", 1)[-1].removesuffix(".html")
        for href in page.locator("#search-results ul.search li a").evaluate_all("as => as.map(a => a.href)")
    }
    missing = {p for p in using if p.startswith("notebooks/")} - found
    assert not missing, f"searching {term} misses notebook pages that use it: {sorted(missing)} (found {sorted(found)})"


def test_every_page_passes_axe_with_no_serious_or_critical_violation(built_site, site_url, browser):
    """axe-core's automated checks (WCAG 2 A/AA and best practices) on every page of both editions."""
    from axe import serious_violations

    page = browser.new_page()
    problems = {}
    for path in _pages(built_site):
        _open(page, site_url + path)
        if found := serious_violations(page):
            problems[path] = found
    assert not problems, "\n".join(f"{p}: {v}" for p, vs in problems.items() for v in vs)


def test_keyboard_reaches_the_language_switch_and_the_colab_button(built_site, site_url, browser):
    """Tab alone reaches both, each visibly focused, and Enter on the language switch opens the other edition."""
    for prefix in ("", "zh/"):
        page = browser.new_page()
        _open(page, site_url + f"{prefix}notebooks/{SAMPLE}.html")
        reached = set()
        for _ in range(80):
            page.keyboard.press("Tab")
            focused = page.evaluate(
                "() => { const e = document.activeElement; const s = getComputedStyle(e);"
                " return {cls: e.className || '', href: e.getAttribute('href') || '',"
                " outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0 || s.boxShadow !== 'none'}; }"
            )
            for name, cls in (("switch", "site-language-switch"), ("colab", "site-colab")):
                if cls in focused["cls"]:
                    assert focused["outline"], f"{prefix}: the {name} has no visible focus"
                    reached.add(name)
            if reached == {"switch", "colab"}:
                break
        assert reached == {"switch", "colab"}, f"{prefix}{SAMPLE}: Tab reached only {reached}"
        page.locator(".site-language-switch").focus()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        other = "" if prefix else "zh/"
        assert page.url.endswith(f"/{other}notebooks/{SAMPLE}.html"), page.url
        page.close()


def test_every_figure_has_a_text_alternative_in_its_pages_language(built_site):
    """Each figure's alt is its title as the figure shows it (compose_pages.figure_title), in the page's language."""
    for path in _pages(built_site):
        for alt in re.findall(r'<img[^>]*\balt="([^"]*)"', (built_site / path).read_text(encoding="utf-8")):
            if "/_static/" in alt or alt.endswith((".svg",)):
                continue
            assert alt and not alt.endswith(".png") and "_images/" not in alt, f"{path}: alt {alt!r}"
            chinese = re.search(r"[\u4e00-\u9fff]", alt) is not None
            assert chinese == path.startswith("zh/"), f"{path}: alt {alt!r} is not in the page's language"
    figures = sum(len(re.findall(r"<img[^>]*_images/", (built_site / p).read_text())) for p in _pages(built_site))
    assert figures >= 20, f"only {figures} figures on the site"


def test_pages_fit_a_phone_and_screenshots(built_site, site_url, browser, screenshots):
    page = browser.new_page()
    for rel, name in (
        ("index.html", "site-landing-en.png"),
        (f"notebooks/{SAMPLE}.html", "site-notebook-en.png"),
        (f"zh/notebooks/{SAMPLE}.html", "site-notebook-zh.png"),
    ):
        assert not _open(page, site_url + rel)
        page.screenshot(path=str(screenshots / name))
    page.set_viewport_size(PHONE)
    for rel in ("index.html", f"notebooks/{SAMPLE}.html", f"zh/notebooks/{SAMPLE}.html", "zh/syllabus.html"):
        _open(page, site_url + rel)
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"{rel} is wider than a phone ({widths[0]} px > {widths[1]} px)"
        assert page.locator("a.site-language-switch").is_visible(), f"{rel}: no language switch on a phone"
        searches = page.evaluate(
            "[...document.querySelectorAll('.search-button__button, .search-button-field')]"
            ".filter(b => b.getClientRects().length && getComputedStyle(b).visibility !== 'hidden')"
            ".length"
        )
        assert searches, f"{rel}: no visible search button on a phone"
    page.screenshot(path=str(screenshots / "site-notebook-zh-phone.png"))


def test_make_site_says_which_repository_its_colab_buttons_open_and_how_to_change_it(built_site):
    """A fork that publishes its site must not send students to someone else's notebooks unawares."""
    said = MAKE_SITE_SAID[0]
    assert f"Colab buttons open the notebooks of https://github.com/{settings.github_path()} at branch " in said, said
    assert "NAMEDAXES_SITE_REPOSITORY=https://github.com/OWNER/NAME" in said, said
    page = (SITE / "notebooks" / "02_scaled_sum.html").read_text()
    opens = f"{settings.COLAB}/{settings.github_path()}/blob/{settings.BRANCH}/"
    assert opens in page, "the note names what the pages open"
