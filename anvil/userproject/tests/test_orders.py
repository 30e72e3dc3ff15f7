from datetime import timedelta

from shop.jobs import charge_card, send_receipt

from acta import JobStatus


def test_receipt_is_sent(acta_host):
    ref = send_receipt.enqueue(7)
    assert acta_host.tick() == "completed"
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert acta_host.app.result(ref) == "receipt for order 7"


def test_receipt_timeline(acta_host):
    ref = send_receipt.enqueue(8)
    acta_host.tick()
    assert acta_host.event_names(ref) == [
        "enqueued",
        "execution-started",
        "execution-finished",
        "succeeded",
    ]


def test_charge_is_retried(acta_host):
    ref = charge_card.enqueue(1)
    start = acta_host.clock.now()
    assert acta_host.tick() == "rearmed"
    assert acta_host.job(ref).next_run_at == start + timedelta(seconds=30)
    acta_host.advance("30s")
    assert acta_host.tick() == "completed"


def test_bad_order_fails_for_good(acta_host):
    ref = charge_card.enqueue(-1)
    assert acta_host.run_until_idle() == 4
    job = acta_host.job(ref)
    assert job.status is JobStatus.FAILED and job.attempts == 4


def test_delayed_receipt_waits(acta_host):
    ref = send_receipt.enqueue(9, delay="1h")
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1h")
    assert acta_host.tick() == "completed"
    assert acta_host.job(ref).executions == 1
