"""axe-core's automated accessibility checks in a Playwright page (tests/browser).

axe-core is pinned by tests/browser/axe/package-lock.json and installed by `make browser-deps`
(`npm ci` into build/axe/, as hub/proxy is); the tests inject its axe.min.js into the page under
test and run `axe.run()` there: the real engine on the real page in Chromium. Without it the tests
that need it skip and say how to install it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = ROOT / "build" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")  # the impacts a page must have none of

RUN = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n').slice(1, 3)
        .join(' ').trim()),
}))"""


def require_axe() -> Path:
    if not AXE_JS.is_file():
        where = AXE_JS.relative_to(ROOT)
        pytest.skip(f"axe-core is not installed at {where}: `make browser-deps` installs it (npm ci)")
    return AXE_JS


def serious_violations(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each (empty: none)."""
    # through the DevTools protocol, which a page's Content-Security-Policy does not govern: the class report
    # and the feedback pages forbid every script (their CSP), and must still be checked as they are
    cdp = page.context.new_cdp_session(page)
    try:
        loaded = cdp.send("Runtime.evaluate", {"expression": require_axe().read_text(encoding="utf-8")})
        assert "exceptionDetails" not in loaded, loaded
    finally:
        cdp.detach()
    found = page.evaluate(RUN)
    return [f"{v['id']} ({v['impact']}): {v['help']}: {v['nodes']}" for v in found if v["impact"] in BLOCKING]
