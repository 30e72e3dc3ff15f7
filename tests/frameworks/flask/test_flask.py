"""acta.contrib.flask: an application factory, handlers in the app context, `flask acta worker`,
and enqueue on Flask-SQLAlchemy's session (the job commits or rolls back with the row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask, current_app
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.orm import Mapped, mapped_column

from acta import Acta, JobStatus
from acta.contrib.flask import ActaFlask
from acta.errors import JobNotFoundError

db = SQLAlchemy()


class Order(db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    number: Mapped[int]
    handled: Mapped[bool] = mapped_column(default=False)


def build(tmp_path: Path) -> tuple[Flask, ActaFlask, Acta]:
    ledger = tmp_path / "shop.sqlite3"
    jobs = Acta(ledger, apply_migrations=True)
    jobs.migrate()

    @jobs.job("greet")
    def greet(name: str) -> str:
        return f"{current_app.config['GREETING']}, {name}"  # needs the app context

    @jobs.job("handle-order")
    async def handle_order(number: int) -> int:
        order = db.session.execute(db.select(Order).filter_by(number=number)).scalar_one()
        order.handled = True
        db.session.commit()
        return number

    ext = ActaFlask(jobs, db=db)

    def create_app() -> Flask:  # the factory: the extension is made before any app
        app = Flask("shop")
        app.config.update(GREETING="hello", SQLALCHEMY_DATABASE_URI=f"sqlite:///{ledger}")
        db.init_app(app)
        ext.init_app(app)
        with app.app_context():
            db.create_all()
        return app

    return create_app(), ext, jobs


def worker_batch(app: Flask) -> str:
    out = app.test_cli_runner().invoke(args=["acta", "worker", "--batch"])
    assert out.exit_code == 0, out.output
    return str(out.output).strip()


def test_handlers_run_in_the_app_context_from_flask_acta_worker(tmp_path: Path) -> None:
    app, ext, jobs = build(tmp_path)
    assert app.extensions["acta"] is ext
    ref = jobs.enqueue("greet", "Ada")
    assert worker_batch(app) == "ran 1 job(s)"
    assert jobs.result(ref) == "hello, Ada"


def test_enqueue_commits_with_the_session(tmp_path: Path) -> None:
    app, ext, jobs = build(tmp_path)
    with app.app_context():
        db.session.add(Order(number=1))
        ref = ext.enqueue("handle-order", 1)
        db.session.commit()
    assert jobs.get(ref).status is JobStatus.READY
    assert worker_batch(app) == "ran 1 job(s)"
    assert jobs.result(ref) == 1
    with app.app_context():
        assert db.session.execute(db.select(Order)).scalar_one().handled


def test_enqueue_rolls_back_with_the_session(tmp_path: Path) -> None:
    app, ext, jobs = build(tmp_path)
    with app.app_context():
        db.session.add(Order(number=2))
        ref = ext.enqueue("handle-order", 2)
        db.session.rollback()
        assert db.session.execute(db.select(Order)).first() is None
    with pytest.raises(JobNotFoundError):
        jobs.get(ref)
    assert worker_batch(app) == "ran 0 job(s)"


def test_a_second_app_from_the_factory_rebinds_the_handlers(tmp_path: Path) -> None:
    _, ext, jobs = build(tmp_path)
    other = Flask("other")
    other.config.update(GREETING="bonjour", SQLALCHEMY_DATABASE_URI="sqlite://")
    ext.init_app(other)
    ref = jobs.enqueue("greet", "Ada")
    runner: Any = other.test_cli_runner()
    assert runner.invoke(args=["acta", "worker", "--batch"]).exit_code == 0
    assert jobs.result(ref) == "bonjour, Ada"
