"""Worker settings: the defaults, the one liveness knob (heartbeat) and what it implies, and
settings that are refused at construction."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from acta import Acta, ValidationError, WorkerStatus
from acta_testing import Host


def test_heartbeat_defaults_to_45s_with_a_lease_of_4_and_death_at_7_beats(acta_app: Acta) -> None:
    worker = acta_app.worker()
    assert worker.heartbeat == timedelta(seconds=45)
    assert (worker.lease, worker.dead_after) == (timedelta(minutes=3), timedelta(seconds=315))
    quick = acta_app.worker(heartbeat="2s")
    assert (quick.lease, quick.dead_after) == (timedelta(seconds=8), timedelta(seconds=14))
    with pytest.raises(TypeError):  # one knob: lease and death follow from the heartbeat
        acta_app.worker(lease="10s")  # type: ignore[call-arg]


def test_a_silent_worker_is_not_dead_before_seven_heartbeats(
    acta_app: Acta, acta_host: Host
) -> None:
    silent = acta_host.worker
    peer = acta_host.add_worker()
    acta_host.tick(silent)  # registers
    acta_host.kill(silent)

    def status() -> WorkerStatus:
        return {w.incarnation: w.status for w in acta_app.workers()}[silent.incarnation]

    acta_host.advance(silent.dead_after - peer.heartbeat)  # six beats of silence
    acta_host.tick(peer)
    assert status() is WorkerStatus.ACTIVE
    acta_host.advance(peer.heartbeat * 2)  # past seven, and recovery has run again since
    acta_host.tick(peer)
    assert status() is WorkerStatus.DEAD


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"executors": 0}, "executors"),
        ({"executors": 1001}, "executors"),
        ({"executors": True}, "executors"),
        ({"heartbeat": "10ms"}, "heartbeat"),
        ({"heartbeat": "2h"}, "heartbeat"),
        ({"poll": "1ms"}, "poll"),
        ({"poll": "11m"}, "poll"),
        ({"shutdown_grace": "-1s"}, "shutdown_grace"),
        ({"profile": "eager"}, "profile"),
        ({"profile": "bulk", "flush": "0s"}, "flush"),
        ({"profile": "bulk", "flush": "6s"}, "flush"),
        ({"profile": "bulk", "flush_max": 0}, "flush_max"),
        ({"profile": "bulk", "flush_max": 10_001}, "flush_max"),
        ({"profile": "bulk", "flush_max": True}, "flush_max"),
        ({"host": ""}, "host"),
        ({"host": "web-1\nfake log line"}, "host"),
        ({"host": "x" * 101}, "host"),
    ],
)
def test_bad_settings_are_refused_at_construction(
    acta_app: Acta, settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        acta_app.worker(**settings)
    assert caught.value.field == field


def test_an_explicit_host_label_is_what_operators_see(acta_app: Acta, acta_host: Host) -> None:
    worker = acta_host.add_worker(host="batch-box-3")
    [info] = [w for w in acta_app.workers() if w.incarnation == worker.incarnation]
    assert info.host == "batch-box-3" and worker.incarnation.startswith("batch-box-3:")
