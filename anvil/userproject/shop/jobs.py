"""The shop's jobs, declared on a module-level application that names its own database."""

from __future__ import annotations

import os

from acta import Acta, JobContext

app = Acta(os.environ.get("SHOP_DATABASE", "shop-production.sqlite3"))

sent: list[str] = []


@app.job("send-receipt", max_attempts=3, backoff="1m")
def send_receipt(order_id: int) -> str:
    sent.append(f"receipt {order_id}")
    return f"receipt for order {order_id}"


@app.job("charge-card", max_attempts=4, backoff="30s..10m x2")
def charge_card(order_id: int, ctx: JobContext) -> str:
    if order_id < 0:
        raise ValueError(f"no such order {order_id}")
    if ctx.attempt < 2:
        raise ConnectionError("payment gateway unreachable")
    return f"charged {order_id}"


@app.job("restock", timeout="30s", max_attempts=2)
async def restock(sku: str) -> int:
    return len(sku)


@app.job("nightly-report")
def nightly_report(day: str) -> str:
    return f"report for {day}"
