"""The Redis bell against a real Redis: it wakes idle workers of another process on SQLite
sooner than their poll, and losing Redis mid-drain loses no job and only slows pickup.

Workers run in real processes (a SQLite file shared by two processes has no NOTIFY). Each test
waits on real state with a bound: Redis's own count of subscribers, and the job's row through
``app.wait``. The worker polls far less often than the bounds these tests allow a pickup, so a
pickup within the bound can only come from the bell. The outage test runs a throwaway
redis-server of its own on a free port, killed and started again mid-drain.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, ConfigurationError, JobStatus, WaitTimeoutError
from acta.model.rows import Transition
from acta.redis_bell import ENV, RedisWire, scrub, wire_from
from acta.runtime.committer import made_due

redis = pytest.importorskip("redis", reason="the Redis bell needs the redis extra")

LOCAL = "redis://127.0.0.1:6379/0"
POLL = 60  # seconds between the worker's own looks: the bell must beat it by far
BELL_SPEED = 10.0  # a pickup within this can only be the bell's doing (POLL is 60)
WORKER = textwrap.dedent(
    """
    import logging, sys
    from acta import Acta

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
    app = Acta(sys.argv[1], bell=sys.argv[2])

    @app.job("touch")
    def touch(n: int) -> int:
        return n

    if __name__ == "__main__":
        app.run_worker(poll=float(sys.argv[3]), executors=2)
    """
)


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll real state (another process, Redis) until ``check`` holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def _subscribers(url: str, channel: str) -> int:
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return int(dict(client.pubsub_numsub(channel)).get(channel.encode(), 0))
    except redis.RedisError:
        return 0
    finally:
        client.close()


def _reachable(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _app(tmp_path: Path, bell: str) -> Acta:
    app = Acta(tmp_path / "ledger.db", bell=bell, apply_migrations=True)

    @app.job("touch")
    def touch(n: int) -> int:
        return n

    assert app.workers() == []  # the ledger file exists (migrated) before any worker opens it
    return app


@contextmanager
def _worker(tmp_path: Path, bell: str, poll: float = POLL) -> Iterator[subprocess.Popen[str]]:
    script = tmp_path / "worker_main.py"
    script.write_text(WORKER)
    log = (tmp_path / "worker.log").open("w")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(ENV, None)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "ledger.db"), bell, str(poll)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        yield proc
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen[str]) -> None:
    """A graceful stop (SIGTERM), a kill if it takes more than 30 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def _redis_server(port: int) -> Iterator[subprocess.Popen[bytes]]:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    proc = subprocess.Popen(
        [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _until(lambda: _reachable(url), 20, f"redis-server on port {port} answers")
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def local_redis() -> str:
    if not _reachable(LOCAL):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Redis at {LOCAL} does not answer (.ci/run starts it)")
        pytest.skip(f"Redis at {LOCAL} does not answer")
    return LOCAL


# -- configuration ----------------------------------------------------------------------


def test_bell_setting_is_a_redis_url_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert wire_from(None, schema="acta", namespace="default") is None
    assert wire_from("", schema="acta", namespace="default") is None
    wire = wire_from(" redis://127.0.0.1:6379/2 ", schema="acta", namespace="mail")
    assert isinstance(wire, RedisWire)
    assert wire.channel == "acta:bell:acta:mail"
    with pytest.raises(ConfigurationError, match=r"is not a Redis URL: use redis://"):
        wire_from("amqp://127.0.0.1", schema="acta", namespace="default")
    with pytest.raises(ConfigurationError, match="give a Redis URL"):
        wire_from(6379, schema="acta", namespace="default")  # type: ignore[arg-type]
    monkeypatch.setenv(ENV, "http://nope")
    with pytest.raises(ConfigurationError, match=r"^\$ACTA_BELL='http://nope' is not a Redis"):
        wire_from(None, schema="acta", namespace="default")
    assert wire_from("", schema="acta", namespace="default") is None  # "" overrides the variable
    monkeypatch.setenv(ENV, "redis://127.0.0.1:6379/0")
    found = wire_from(None, schema="acta", namespace="default")
    assert found is not None and found.url == "redis://127.0.0.1:6379/0"


def test_passwords_stay_out_of_messages() -> None:
    assert scrub("redis://user:s3cret@host:6380/1") == "redis://user:***@host:6380/1"
    assert scrub("redis://:s3cret@host/0") == "redis://:***@host/0"
    assert scrub("redis://host:6379/0") == "redis://host:6379/0"


def test_a_bell_that_does_not_answer_costs_the_enqueue_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"redis://127.0.0.1:{_free_port()}/0"
    app = _app(tmp_path, dead)
    caplog.set_level(logging.WARNING, logger="acta.bell")
    refs = [app.enqueue("touch", n) for n in range(3)]
    assert app.bell.wire is not None and app.bell.wire.flush(10)
    assert len(refs) == 3
    said = [r.getMessage() for r in caplog.records if "cannot ring Redis" in r.getMessage()]
    assert len(said) == 1, said  # one warning per outage, not one per ring
    assert all(r.exc_info is None for r in caplog.records)


# -- waking workers in another process ---------------------------------------------------


def test_ring_wakes_an_idle_worker_in_another_process(tmp_path: Path, local_redis: str) -> None:
    app = _app(tmp_path, local_redis)
    channel = f"acta:bell:acta:{app.namespace}"
    # Another test's worker may listen on the same channel: count this one in.
    before = _subscribers(local_redis, channel)
    warm = app.enqueue("touch", 0)  # the worker's first claims take it: idle after that
    with _worker(tmp_path, local_redis):
        assert app.wait(warm, timeout=30) == 0
        _until(lambda: _subscribers(local_redis, channel) > before, 30, "the worker subscribes")
        ref = app.enqueue("touch", 7)
        assert app.wait(ref, timeout=BELL_SPEED) == 7  # its poll is 60 s away


def test_without_a_bell_the_worker_waits_for_its_poll(tmp_path: Path) -> None:
    # The control: the same worker with no bell does not see the job within the bound.
    app = _app(tmp_path, "")
    warm = app.enqueue("touch", 0)
    with _worker(tmp_path, ""):
        assert app.wait(warm, timeout=30) == 0
        # Due 1 s from now, when the claims that follow the warm-up's run are over (enqueued
        # due at once it could race the last of them); nothing rings, so its poll, 60 s away,
        # is the next look.
        ref = app.enqueue("touch", 7, delay=1)
        with pytest.raises(WaitTimeoutError):
            app.wait(ref, timeout=4)


def test_redis_lost_and_back_mid_drain_loses_no_job(tmp_path: Path) -> None:
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    app = _app(tmp_path, url)
    channel = f"acta:bell:acta:{app.namespace}"
    poll = 20  # jobs enqueued during the outage are found by the reconnect's look, or this
    with _redis_server(port) as server, _worker(tmp_path, url, poll=poll) as worker:
        _until(lambda: _subscribers(url, channel) == 1, 30, "the worker subscribes")
        first = [app.enqueue("touch", n) for n in range(20)]
        server.kill()
        server.wait(timeout=10)
        during = [app.enqueue("touch", n) for n in range(20, 30)]  # rings go nowhere
        with _redis_server(port):
            _until(lambda: _subscribers(url, channel) == 1, 60, "the worker subscribes again")
            for n, ref in enumerate([*first, *during]):
                assert app.wait(ref, timeout=3 * poll) == n
            # Back to bell speed: a pickup well inside the 20 s poll.
            after = app.enqueue("touch", 99)
            assert app.wait(after, timeout=poll / 2) == 99
            _stop(worker)  # while Redis still answers: the log holds one outage
    statuses = {app.get(ref).status for ref in [*first, *during, after]}
    assert statuses == {JobStatus.SUCCEEDED}
    said = (tmp_path / "worker.log").read_text()
    assert said.count("cannot hear Redis") == 1, said
    assert "hears Redis" in said and "again" in said
    assert "Traceback" not in said, said


def test_a_worker_whose_bell_never_answers_still_works_by_polling(tmp_path: Path) -> None:
    dead = f"redis://127.0.0.1:{_free_port()}/0"
    app = _app(tmp_path, dead)
    with _worker(tmp_path, dead, poll=0.5) as worker:
        ref = app.enqueue("touch", 5)
        assert app.wait(ref, timeout=30) == 5
        _stop(worker)
    said = (tmp_path / "worker.log").read_text()
    assert said.count("cannot hear Redis") == 1, said  # said once, however many retries
    assert "Traceback" not in said, said


def _plan(status: JobStatus, **fields: Any) -> Transition:
    return Transition(1, "ref", 1, 1, (JobStatus.EXECUTING,), status, **fields)


def test_settles_that_make_work_due_now_ring() -> None:
    assert made_due(_plan(JobStatus.SUCCEEDED, lane_id=3), JobStatus.SUCCEEDED)  # promotes
    assert made_due(_plan(JobStatus.FAILED, parent_id=9), JobStatus.FAILED)  # parent's latch
    assert made_due(_plan(JobStatus.READY), JobStatus.READY)  # handed back
    assert made_due(_plan(JobStatus.READY, delay_ms=0), JobStatus.READY)  # released, retried
    assert not made_due(_plan(JobStatus.READY, delay_ms=5000), JobStatus.READY)  # the poll's
    assert not made_due(_plan(JobStatus.SUCCEEDED), JobStatus.SUCCEEDED)
    assert not made_due(_plan(JobStatus.SUCCEEDED, lane_id=3), None)  # fenced: nothing written
    assert not made_due(_plan(JobStatus.SUSPENDED), JobStatus.SUSPENDED)
