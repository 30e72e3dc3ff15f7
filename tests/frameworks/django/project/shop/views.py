from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from project.shop.models import Order
from project.shop.tasks import handle_order


def place(request: HttpRequest, number: int) -> HttpResponse:
    """Under ATOMIC_REQUESTS: the order and its job commit together, or neither does."""
    Order.objects.create(number=number)
    result = handle_order.enqueue(number)
    if request.GET.get("fail"):
        raise RuntimeError("the view failed after enqueueing")
    return JsonResponse({"id": result.id})
