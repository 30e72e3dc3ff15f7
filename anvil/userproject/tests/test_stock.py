from shop.jobs import nightly_report, restock

from acta import JobStatus


async def test_restock_runs(acta_async_host):
    ref = await restock.enqueue_async("SKU-123")
    assert await acta_async_host.tick() == "completed"
    assert await acta_async_host.app.result_async(ref) == 7


def test_everything_settles(acta_host):
    refs = [nightly_report.enqueue(f"2026-01-0{d}") for d in range(1, 4)]
    assert acta_host.run_until_idle() == 3
    assert all(acta_host.job(r).status is JobStatus.SUCCEEDED for r in refs)


def test_a_peer_recovers_a_killed_worker(acta_host):
    first = acta_host.worker
    peer = acta_host.add_worker()
    ref = nightly_report.enqueue("2026-01-04")
    acta_host.kill(first)
    assert acta_host.tick(peer) == "completed"
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
