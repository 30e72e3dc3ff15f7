from __future__ import annotations

from django.urls import path

from project.shop.views import place

urlpatterns = [path("place/<int:number>", place)]
