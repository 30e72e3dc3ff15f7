"""The embedded operator dashboard and its JSON API (``pip install 'acta-jobs[dashboard]'``).

``create_dashboard(app)`` returns an ASGI application to mount in any ASGI host (FastAPI,
Starlette, Django ASGI, Litestar) or to run with ``acta dashboard --app module:app``. It reads
the same rows a user can SELECT, through acta's reader and operator surface; it is local-only
and read-only until told otherwise (docs/guide/dashboard.md).
"""

from __future__ import annotations

from acta.dashboard.config import LOCAL_ACTOR, VERB_FAMILIES, DashboardConfig
from acta.dashboard.server import create_dashboard

__all__ = ["LOCAL_ACTOR", "VERB_FAMILIES", "DashboardConfig", "create_dashboard"]
