"""What an operator does in the browser: find a failed job, read its timeline, restart it (the
verb goes through the operator surface and its event appears on the page); and the overview
that updates its counts by itself while a worker runs a new job.

Every wait is on the DOM with a bound (DOM_WAIT_MS); nothing sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_support import DOM_WAIT_MS, EVENTS, JOB_STATUS, Site, Watch, drain

from acta.model.codes import JobStatus


def _count(page: Any, status: str) -> int:
    return int(page.get_by_test_id(f"count-{status}").inner_text().strip().replace(",", ""))


def test_jobs_list_to_job_to_timeline_to_restart(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    ref = str(site.refs.failed)
    opened.goto(site.url("/jobs"))
    row = opened.get_by_test_id("jobs-table").locator(f'[data-testid="job-row"][data-ref="{ref}"]')
    row.locator("a").first.click()
    opened.wait_for_url(f"**/jobs/{ref}", timeout=DOM_WAIT_MS)
    assert opened.locator(JOB_STATUS).inner_text().strip().lower() == "failed"
    names = [e.get_attribute("data-event") for e in opened.locator(EVENTS).all()]
    assert names[0] == "enqueued" and "failed" in names and "restarted" not in names

    opened.on("dialog", lambda dialog: dialog.accept())  # a confirm() before the verb, if any
    # The verb is a form POST that redirects back to the job (no script needed to restart).
    with opened.expect_navigation(timeout=DOM_WAIT_MS) as navigation:
        opened.get_by_test_id("verb-restart").click()
    answer = navigation.value
    assert answer is not None and answer.ok, (
        f"restart answered {answer and answer.status}: {opened.inner_text('body')[:300]}"
    )
    restarted = opened.locator(f'{EVENTS}[data-event="restarted"]')
    restarted.wait_for(state="attached", timeout=DOM_WAIT_MS)
    assert opened.locator(JOB_STATUS).inner_text().strip().lower() == "ready"
    assert opened.get_by_test_id("verb-message").is_visible()  # the page says it was done
    opened.screenshot(path=str(shots / f"{site.provider}-job-restarted.png"), full_page=True)

    # The page showed what the ledger holds: the operator surface wrote the event.
    last = site.host.events(ref)[-1]
    assert last.code.label == "restarted", last
    assert last.actor == "dashboard@local", last  # the actor is recorded
    assert "dashboard@local" in opened.locator(f'{EVENTS}[data-event="restarted"]').inner_text()
    assert site.host.job(ref).status is JobStatus.READY
    assert watch.errors == []
    assert watch.foreign(site.served) == []


def test_the_overview_refreshes_its_counts_while_a_worker_runs(
    site: Site, page: tuple[Any, Watch]
) -> None:
    opened, watch = page
    opened.goto(site.url("/"))
    before = _count(opened, "succeeded")
    opened.evaluate("window.__actaNotReloaded = true")

    site.welcome("late@example.com")
    assert drain(site.host) >= 1

    opened.wait_for_function(
        "n => Number(document.querySelector('[data-testid=\"count-succeeded\"]')"
        ".textContent.trim().replace(/,/g, '')) === n",
        arg=before + 1,
        timeout=DOM_WAIT_MS,
    )
    # The same document: the count changed in place, not by reloading the page.
    assert opened.evaluate("window.__actaNotReloaded === true")
    assert any("/api/" in url for url in watch.requests), "no poll of the JSON API was seen"
    assert watch.errors == []
    assert watch.foreign(site.served) == []


def test_tenants_page_suspends_and_resumes_a_tenant(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    opened.on("dialog", lambda dialog: dialog.accept())
    opened.goto(site.url("/tenants"))
    row = opened.locator('[data-testid="tenant-row"][data-tenant="acme-retail"]')
    assert row.get_by_test_id("tenant-state").inner_text().strip() == "active"
    row.get_by_test_id("verb-reason").fill("card declined")
    with opened.expect_navigation(timeout=DOM_WAIT_MS) as navigation:
        row.get_by_test_id("verb-suspend").click()
    assert navigation.value is not None and navigation.value.ok
    assert "Tenant acme-retail suspended." in opened.get_by_test_id("verb-message").inner_text()
    state = row.get_by_test_id("tenant-state").inner_text()
    assert "dashboard@local" in state and "card declined" in state
    opened.screenshot(path=str(shots / f"{site.provider}-tenant-suspended.png"), full_page=True)
    tenant = site.app.tenants.get("acme-retail")
    assert tenant is not None and tenant.suspended and tenant.suspended_by == "dashboard@local"
    with opened.expect_navigation(timeout=DOM_WAIT_MS):
        row.get_by_test_id("verb-resume").click()
    assert row.get_by_test_id("tenant-state").inner_text().strip() == "active"
    assert site.app.tenants.get("acme-retail").suspended is False  # type: ignore[union-attr]
    assert watch.errors == []
    assert watch.foreign(site.served) == []
