"""Every dashboard page, opened in chromium over a ledger a real worker run filled (SQLite and
PostgreSQL): it renders what the run left, the console stays free of errors, no request leaves
the dashboard's origin, and a screenshot of it is kept as a CI artifact.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser_support import EVENTS, JOB_STATUS, Served, Site, Watch, new_tab

# ACTA_DOCS_SCREENSHOTS=1 also refreshes the pictures in docs/guide/dashboard.md from the
# SQLite run: the overview, and the page of the job that failed.
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "guide" / "img"
DOCS_SHOTS = {"overview": "dashboard-overview.png", "job-failed": "dashboard-job.png"}


def _for_docs(site: Site, shot: Path, name: str) -> None:
    wanted = os.environ.get("ACTA_DOCS_SCREENSHOTS") == "1" and site.provider == "sqlite"
    if wanted and name in DOCS_SHOTS:
        shutil.copyfile(shot, DOCS_IMG / DOCS_SHOTS[name])


# Each page, and text it must show for the demo run (so a blank page cannot pass).
PAGES = {
    "overview": ("/", "books do not balance"),
    "jobs": ("/jobs", "import-feed"),
    "workers": ("/workers", "alive"),
    "alerts": ("/alerts", "books do not balance"),
    "definitions": ("/definitions", "sync-crm"),
    "schedules": ("/schedules", "rollup-metrics"),
    "namespaces": ("/namespaces", "default"),
    "tenants": ("/tenants", "acme-retail"),
}


def _clean(site: Site, watch: Watch) -> None:
    assert watch.errors == [], f"console errors on {site.provider}: {watch.errors}"
    assert watch.requests, "the page recorded no request at all"
    assert watch.foreign(site.served) == [], "requests left the dashboard's origin"


def _open(site: Site, page: Any, path: str) -> None:
    response = page.goto(site.url(path))
    assert response is not None, path
    assert response.status == 200, f"{path}: {response.status}: {page.inner_text('body')[:500]}"
    page.wait_for_load_state("load")


@pytest.mark.parametrize("name", list(PAGES))
def test_each_page_renders_the_run_with_no_error_and_no_foreign_request(
    site: Site, page: tuple[Any, Watch], shots: Path, name: str
) -> None:
    opened, watch = page
    path, expected = PAGES[name]
    _open(site, opened, path)
    assert expected in opened.inner_text("body")
    # The stylesheet and script are the dashboard's own: they were requested, from its origin.
    kinds = {r.rsplit(".", 1)[-1].split("?")[0] for r in watch.requests}
    assert {"css", "js"} <= kinds, watch.requests
    shot = shots / f"{site.provider}-{name}.png"
    opened.screenshot(path=str(shot), full_page=True)
    _for_docs(site, shot, name)
    _clean(site, watch)


JOB_STATES = {
    "failed": "failed",
    "retrying": "ready",
    "scheduled": "ready",
    "cancelled": "cancelled",
    "alerting": "succeeded",
}


def test_each_job_page_shows_its_status_and_timeline(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    for which, status in JOB_STATES.items():
        ref = getattr(site.refs, which)
        _open(site, opened, f"/jobs/{ref}")
        assert opened.locator(JOB_STATUS).inner_text().strip().lower() == status, which
        events = opened.locator(EVENTS)
        assert events.first.get_attribute("data-event") == "enqueued", which
        shot = shots / f"{site.provider}-job-{which}.png"
        opened.screenshot(path=str(shot), full_page=True)
        _for_docs(site, shot, f"job-{which}")
    _clean(site, watch)


def test_an_unknown_job_is_a_404_page_without_a_stack_trace(
    site: Site, page: tuple[Any, Watch]
) -> None:
    opened, _ = page  # the 404 is expected here: its console line is not checked
    response = opened.goto(site.url("/jobs/job_01kdvdna00fwv8shdgvr5yb40z"))
    assert response is not None and response.status == 404
    body = opened.inner_text("body")
    assert "Traceback" not in body and 'File "' not in body


def test_the_theme_toggle_switches_light_and_dark_and_is_remembered(
    site: Site, browser: Any, shots: Path
) -> None:
    context, opened, watch = new_tab(browser)
    _open(site, opened, "/")
    html = opened.locator("html")
    before = html.get_attribute("data-theme") or "light"
    background = opened.evaluate("getComputedStyle(document.body).backgroundColor")
    opened.get_by_test_id("theme-toggle").click()
    after = "dark" if before == "light" else "light"
    opened.wait_for_function(
        f"document.documentElement.getAttribute('data-theme') === '{after}'", timeout=5_000
    )
    assert opened.evaluate("getComputedStyle(document.body).backgroundColor") != background
    opened.screenshot(path=str(shots / f"{site.provider}-overview-{after}.png"), full_page=True)
    # Another page of the same browser keeps the choice.
    _open(site, opened, "/jobs")
    assert html.get_attribute("data-theme") == after
    _clean(site, watch)
    context.close()


def test_the_guide_shows_the_screenshots_it_names() -> None:
    guide = (DOCS_IMG.parent / "dashboard.md").read_text(encoding="utf-8")
    for name in DOCS_SHOTS.values():
        assert f"img/{name}" in guide
        assert (DOCS_IMG / name).stat().st_size > 10_000, name


def test_the_request_record_tells_a_foreign_origin_from_the_dashboard() -> None:
    served = Served("http://127.0.0.1:8765")
    watch = Watch(
        requests=[
            "http://127.0.0.1:8765/static/dashboard.css",
            "data:image/svg+xml,<svg/>",
            "http://localhost:8765/",  # another host name is another origin
            "http://127.0.0.1:8766/api/overview",  # and so is another port
            "https://127.0.0.1:8765/",  # and another scheme
        ]
    )
    assert watch.foreign(served) == watch.requests[2:]
