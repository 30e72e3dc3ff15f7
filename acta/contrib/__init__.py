"""Integrations with web frameworks (each behind its own extra): ``acta.contrib.django``,
``acta.contrib.flask``. ``acta.asgi`` (Starlette, FastAPI) needs no framework import."""
