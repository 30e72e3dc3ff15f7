"""acta.asgi in process: Starlette's TestClient drives the lifespan on its own loop.

The worker these tests start runs for real on that loop; waiting for it is bounded by
``wait(timeout=...)``, never a sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from acta import Acta, JobStatus
from acta.asgi import ENV, ActaLifespan, lifespan, worker_wanted
from acta.errors import ConfigurationError, SchemaError, ValidationError
from acta.model.codes import EventCode, Reason, WorkerStatus


def make_jobs(path: Path) -> Acta:
    jobs = Acta(path / "ledger.sqlite3", apply_migrations=True)

    @jobs.job("double")
    async def double(n: int) -> int:
        return n * 2

    @jobs.job("stall")
    async def stall(_: None) -> None:
        await asyncio.Event().wait()  # never set: only a shutdown ends it

    return jobs


def web(life: ActaLifespan) -> Starlette:
    async def enqueue(request: Request) -> JSONResponse:
        jobs: Acta = request.state.acta
        ref = await jobs.enqueue_async(request.path_params["name"], _n(request))
        return JSONResponse({"ref": str(ref), "user": getattr(request.state, "user", None)})

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"user": getattr(request.state, "user", None)})

    return Starlette(
        routes=[Route("/enqueue/{name}", enqueue, methods=["POST"]), Route("/", echo)],
        lifespan=life,
    )


def _n(request: Request) -> int | None:
    n = request.query_params.get("n")
    return None if n is None else int(n)


def user_lifespan(log: list[str]) -> Any:
    @contextlib.asynccontextmanager
    async def theirs(app: Any) -> AsyncIterator[dict[str, Any]]:
        log.append("user up")
        yield {"user": "theirs"}
        log.append("user down")

    return theirs


def test_state_carries_the_app_and_the_users_lifespan(tmp_path: Path) -> None:
    jobs = make_jobs(tmp_path)
    steps: list[str] = []
    life = lifespan(jobs, inner=user_lifespan(steps), worker=False)
    with TestClient(web(life)) as client:
        assert steps == ["user up"]
        assert client.get("/").json() == {"user": "theirs"}
        ref = client.post("/enqueue/double?n=4").json()["ref"]
    assert steps == ["user up", "user down"]
    assert life.worker is None
    assert jobs.get(ref).status is JobStatus.READY  # web-only: nothing ran it


def test_a_worker_runs_jobs_on_the_servers_loop_and_stops_with_it(tmp_path: Path) -> None:
    jobs = make_jobs(tmp_path)
    life = ActaLifespan(jobs, worker=True, shutdown_grace=5, poll=0.05)
    with TestClient(web(life)) as client:
        ref = jobs.enqueue("double", 21)
        assert jobs.wait(ref, timeout=10) == 42
        via_web = client.post("/enqueue/double?n=5").json()["ref"]
        assert jobs.wait(via_web, timeout=10) == 10
        assert life.worker is not None
        me = life.worker.worker_id
    (row,) = [w for w in jobs.workers() if w.worker_id == me]
    assert row.status is WorkerStatus.STOPPED


def test_shutdown_hands_back_what_did_not_finish_within_the_grace(tmp_path: Path) -> None:
    jobs = make_jobs(tmp_path)
    life = ActaLifespan(jobs, worker=True, shutdown_grace=0.2, poll=0.05)
    with TestClient(web(life)):
        ref = jobs.enqueue("stall")
        _until(lambda: jobs.get(ref).status is JobStatus.EXECUTING)
    job = jobs.get(ref)
    assert job.status is JobStatus.READY
    assert job.lease_expires_at is None
    assert [(e.code, e.reason) for e in jobs.events(ref)][-2:] == [
        (EventCode.EXECUTION_FINISHED, Reason.SHUTDOWN),
        (EventCode.HANDED_BACK, Reason.SHUTDOWN),
    ]
    assert life.worker is not None and life.worker.registered
    (row,) = [w for w in jobs.workers() if w.worker_id == life.worker.worker_id]
    assert row.status is WorkerStatus.STOPPED


def test_a_crashed_worker_is_logged_and_raised_again_at_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    jobs = make_jobs(tmp_path)
    real = jobs.worker

    def broken(**settings: Any) -> Any:
        worker = real(**settings)

        async def serve(stopping: asyncio.Event) -> None:
            raise RuntimeError("the worker broke")

        worker.serve = serve  # type: ignore[method-assign]
        return worker

    monkeypatch.setattr(jobs, "worker", broken)
    life = ActaLifespan(jobs, worker=True)
    client = TestClient(web(life))
    with caplog.at_level(logging.ERROR, logger="acta.asgi"):
        with pytest.raises(RuntimeError, match="the worker broke"), client:
            assert client.get("/").json() == {"user": None}  # the web app goes on
        assert "acta worker crashed" in caplog.text


HOSTED = Acta()  # as a project's module-level application


@HOSTED.job("triple")
def triple(n: int) -> int:
    return n * 3


@pytest.fixture
def acta_app() -> Acta:
    return HOSTED


def test_under_the_test_host_no_worker_starts(acta_host: Any) -> None:
    life = lifespan(HOSTED)
    with TestClient(web(life)) as client:
        ref = client.post("/enqueue/triple?n=3").json()["ref"]
        assert life.worker is None
    assert acta_host.tick() == "completed"
    assert HOSTED.result(ref) == 9


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "off")
    assert worker_wanted() is False
    assert worker_wanted(True) is True
    monkeypatch.setenv(ENV, "1")
    assert worker_wanted() is True
    monkeypatch.setenv(ENV, "sometimes")
    with pytest.raises(ConfigurationError, match="ACTA_WORKER"):
        worker_wanted()
    monkeypatch.delenv(ENV)
    assert worker_wanted() is False  # under acta's pytest plugin


def test_web_only_replica_by_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "0")
    jobs = make_jobs(tmp_path)
    life = lifespan(jobs)
    with TestClient(Starlette(lifespan=life)):
        pass
    assert life.worker is None and jobs.workers() == []


def test_a_missing_ledger_fails_startup_with_the_migrate_hint(tmp_path: Path) -> None:
    jobs = Acta(tmp_path / "absent.sqlite3")
    with (
        pytest.raises(SchemaError, match="acta schema apply"),
        TestClient(Starlette(lifespan=lifespan(jobs, worker=True))),
    ):
        pass


def test_a_bad_worker_setting_fails_where_the_app_is_declared(tmp_path: Path) -> None:
    with pytest.raises((ValidationError, ConfigurationError, TypeError)):
        lifespan(make_jobs(tmp_path), executors=0)


def _until(condition: Any, timeout: float = 10.0) -> None:
    """Wait (bounded) for the real worker to reach a state, reading the ledger."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the worker never got there"
        time.sleep(0.02)
