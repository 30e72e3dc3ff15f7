"""What an operator does in an incident, in chromium: retry every failed job of a filter in one
go (the preview's count is what runs), send the signal a waiting job waits for, and resume a
paused job. Each checks the ledger afterwards and the actor on the events the verbs wrote.

Every wait is on the DOM with a bound (DOM_WAIT_MS); nothing sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_support import DOM_WAIT_MS, EVENTS, JOB_STATUS, Site, Watch, drain

from acta.model.codes import EventCode, JobStatus

ACTOR = "dashboard@local"


def _submit(opened: Any, testid: str) -> None:
    """Click a verb's button and wait for the page it redirects back to."""
    with opened.expect_navigation(timeout=DOM_WAIT_MS) as navigation:
        opened.get_by_test_id(testid).click()
    answer = navigation.value
    assert answer is not None and answer.ok, (
        f"{testid} answered {answer and answer.status}: {opened.inner_text('body')[:300]}"
    )


def _clean(site: Site, watch: Watch) -> None:
    assert watch.errors == [], watch.errors
    assert watch.foreign(site.served) == []


def test_bulk_retry_of_the_failed_jobs_of_a_filter(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    opened.goto(site.url("/jobs?status=failed&job=import-feed"))
    rows = opened.locator('[data-testid="jobs-table"] [data-testid="job-row"]')
    refs = [r.get_attribute("data-ref") for r in rows.all()]
    assert len(refs) >= 2, refs  # the run left two bad feeds
    assert all(site.host.job(r).status is JobStatus.FAILED for r in refs)

    _submit(opened, "bulk-restart")
    opened.wait_for_url("**/bulk/restart?*", timeout=DOM_WAIT_MS)
    preview = opened.get_by_test_id("bulk-preview")
    matched = int(preview.get_attribute("data-matched") or "-1")
    assert matched == len(refs), (matched, refs)  # the preview counts what the list showed
    opened.screenshot(path=str(shots / f"{site.provider}-bulk-preview.png"), full_page=True)
    opened.get_by_test_id("bulk-reason").fill("the feed server is back")
    _submit(opened, "bulk-run")

    message = opened.get_by_test_id("verb-message").inner_text()
    assert f"{matched} of {matched} jobs restarted" in message, message
    for ref in refs:
        assert site.host.job(ref).status is JobStatus.READY, ref
        [event] = [e for e in site.host.events(ref) if e.code is EventCode.RESTARTED]
        assert event.actor == ACTOR and "the feed server is back" in (event.detail or "")
    # The list it returned to is the filter's: failed import-feed jobs, none left.
    assert opened.get_by_test_id("jobs-empty").is_visible()
    _clean(site, watch)


def test_a_signal_sent_from_the_job_page_releases_the_waiting_job(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    ref = str(site.app.definition("approve-order").enqueue("ORD-42"))
    drain(site.host)
    assert site.host.job(ref).status is JobStatus.SUSPENDED

    opened.goto(site.url(f"/jobs/{ref}"))
    assert opened.locator(JOB_STATUS).inner_text().strip().lower() == "suspended"
    opened.get_by_test_id("signal-name").fill("approved")
    opened.get_by_test_id("signal-payload").fill('"yes, ship it"')
    _submit(opened, "verb-signal")

    assert "released" in opened.get_by_test_id("verb-message").inner_text()
    signalled = opened.locator(f'{EVENTS}[data-event="signalled"]')
    signalled.wait_for(state="attached", timeout=DOM_WAIT_MS)
    assert ACTOR in signalled.inner_text()
    opened.screenshot(path=str(shots / f"{site.provider}-job-signalled.png"), full_page=True)
    assert site.host.job(ref).status is JobStatus.READY
    [event] = [e for e in site.host.events(ref) if e.code is EventCode.SIGNALLED]
    assert event.actor == ACTOR
    drain(site.host)
    assert site.host.job(ref).status is JobStatus.SUCCEEDED
    assert site.app.result(ref) == "order ORD-42: yes, ship it"
    _clean(site, watch)


def test_a_paused_job_is_resumed_from_its_page(
    site: Site, page: tuple[Any, Watch], shots: Path
) -> None:
    opened, watch = page
    ref = str(site.app.definition("audit-books").enqueue())
    drain(site.host)
    assert site.host.job(ref).status is JobStatus.PAUSED

    opened.goto(site.url(f"/jobs/{ref}"))
    assert opened.locator(JOB_STATUS).inner_text().strip().lower() == "paused"
    _submit(opened, "verb-resume")

    assert opened.locator(JOB_STATUS).inner_text().strip().lower() == "ready"
    resumed = opened.locator(f'{EVENTS}[data-event="resumed"]')
    resumed.wait_for(state="attached", timeout=DOM_WAIT_MS)
    assert ACTOR in resumed.inner_text()
    opened.screenshot(path=str(shots / f"{site.provider}-job-resumed.png"), full_page=True)
    assert site.host.job(ref).status is JobStatus.READY
    [event] = [e for e in site.host.events(ref) if e.code is EventCode.RESUMED]
    assert event.actor == ACTOR
    _clean(site, watch)
