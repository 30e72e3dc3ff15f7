"""The shop's tasks, as a Django project writes them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.tasks import TaskContext, task

from project.shop.models import Order


class OrderMissing(Exception):
    pass


@task
def handle_order(number: int) -> int:
    # Runs only once its order's row is visible: the job committed with it.
    order = Order.objects.get(number=number)
    if order.handled:
        raise AssertionError(f"order {number} handled twice")
    order.handled = True
    order.save()
    return number


@task(priority=10, queue_name="mail")
async def send_receipt(number: int, *, email: str) -> dict[str, object]:
    return {"number": number, "to": email}


@task(takes_context=True)
def fails(context: TaskContext, reason: str) -> None:
    raise OrderMissing(f"{reason} (attempt {context.attempt})")


@task
def hold(marker: str) -> int:
    """Runs until ``marker`` exists (the process tests stop a worker while it runs)."""
    while not Path(marker).exists():
        time.sleep(0.02)
    return os.getpid()
