"""Every page in both themes, at a desktop's width and a phone's: it renders with no console
error, the page never grows wider than the screen (tables scroll inside themselves), and a
screenshot of each is kept. With ACTA_DOCS_SCREENSHOTS=1 the SQLite run also refreshes the
pictures in docs/guide/img/ (the viewport only, so each PNG stays small).

Instants read relative with the exact one on hover: in a browser set to Paris, the script puts
the viewer's time zone in the title; the text never wraps.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser_support import DOM_WAIT_MS, Site, Watch

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "guide" / "img"
PAGES = {
    "overview": "/",
    "jobs": "/jobs?status=failed",
    "job": "/jobs/{failed}",
    "workers": "/workers",
    "alerts": "/alerts",
    "definitions": "/definitions",
    "schedules": "/schedules",
    "gates": "/gates",
    "namespaces": "/namespaces",
    "tenants": "/tenants",
    "bulk": "/bulk/restart?status=failed&job=import-feed",
}
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
THEMES = ("light", "dark")


def _for_docs(site: Site, shot: Path) -> None:
    if os.environ.get("ACTA_DOCS_SCREENSHOTS") == "1" and site.provider == "sqlite":
        shutil.copyfile(shot, DOCS_IMG / f"dashboard-{shot.name.split('-', 1)[1]}")


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("theme", THEMES)
def test_every_page_in_each_theme_and_width(
    site: Site, browser: Any, shots: Path, theme: str, width: str
) -> None:
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h}, color_scheme=theme)
    context.set_default_timeout(DOM_WAIT_MS)
    try:
        opened = context.new_page()
        watch = Watch()
        watch.attach(opened)
        for name, path in PAGES.items():
            response = opened.goto(site.url(path.format(failed=site.refs.failed)))
            assert response is not None and response.status == 200, (name, response)
            opened.wait_for_load_state("load")
            dark = opened.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
            assert dark is (theme == "dark"), name
            overflow = opened.evaluate(
                "document.scrollingElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 1, f"{name} at {width} is {overflow}px wider than the screen"
            shot = shots / f"{site.provider}-{name}-{theme}-{width}.png"
            opened.screenshot(path=str(shot))
            _for_docs(site, shot)
        assert watch.errors == [], watch.errors
        assert watch.foreign(site.served) == []
    finally:
        context.close()


def test_instants_are_relative_with_the_viewers_zone_on_hover(site: Site, browser: Any) -> None:
    context = browser.new_context(timezone_id="Europe/Paris", locale="en-GB")
    try:
        opened = context.new_page()
        opened.goto(site.url(f"/jobs/{site.refs.failed}"))
        first = opened.locator('[data-testid="timeline"] time[datetime]').first
        first.wait_for(state="attached", timeout=DOM_WAIT_MS)
        assert first.get_attribute("data-local") == "1"
        title = first.get_attribute("title") or ""
        assert "CET" in title or "GMT+1" in title, title  # the viewer's zone, from the script
        assert title.endswith(" UTC"), title  # and the exact instant in UTC
        text = first.inner_text()
        assert "ago" in text or text == "just now", text
        assert opened.evaluate("e => getComputedStyle(e).whiteSpace", first.element_handle()) == (
            "nowrap"
        )
    finally:
        context.close()
