"""``create_dashboard``: the dashboard as one ASGI application, mountable at any path.

Routes: a page per subject (``/``, ``/jobs``, ``/jobs/{ref}``, ``/workers``, ``/alerts``,
``/definitions``, ``/schedules``, ``/namespaces``, ``/tenants``), the same data as JSON under
``/api/...``, and one POST endpoint per verb (``/api/jobs/{ref}/restart``...). Everything passes the
``Guard`` first (acta.dashboard.guard); verbs also pass the family switch and the CSRF checks
(acta.dashboard.csrf). Reads and verbs run the application's synchronous calls in Starlette's
thread pool, so the dashboard needs nothing from the host's event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from acta.dashboard import body, bulk, filters, timefmt
from acta.dashboard.bulk import ScopeError
from acta.dashboard.config import VERB_FAMILIES, Authorize, DashboardConfig, build_config
from acta.dashboard.csrf import FIELD, HEADER, Csrf, CsrfError
from acta.dashboard.guard import Guard
from acta.dashboard.source import Source
from acta.dashboard.verbs import run_verb
from acta.errors import (
    ActaError,
    ConflictError,
    DatabaseUnavailableError,
    InvalidJobRefError,
    JobNotFoundError,
    ValidationError,
)

if TYPE_CHECKING:
    from acta.app import Acta

Handler = Callable[[Request], Awaitable[Response]]
FORM = "application/x-www-form-urlencoded"
PAGES = (
    "overview",
    "jobs",
    "workers",
    "alerts",
    "definitions",
    "schedules",
    "gates",
    "namespaces",
    "tenants",
)


def _status_of(exc: Exception) -> int:
    """The HTTP status for an error acta raised: the caller's fault (400, 404, 409) only when
    it is; an unreachable database is 503 and anything else 500, never "bad request"."""
    if isinstance(exc, ScopeError):
        return 403
    if isinstance(exc, ValidationError):
        return 400
    if isinstance(exc, LookupError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, DatabaseUnavailableError):
        return 503
    if isinstance(exc, ActaError):
        return 500
    return 400  # a ValueError from a verb's own argument parsing


class Dashboard:
    """The routes, templates and state of one dashboard; ``asgi`` is what a host mounts."""

    def __init__(self, app: Acta, config: DashboardConfig) -> None:
        self.config = config
        self.source = Source(app)
        self.app = app
        self.csrf = Csrf()
        self.env = Environment(
            loader=PackageLoader("acta.dashboard", "templates"),
            autoescape=select_autoescape(default=True),
        )
        routes = [
            Route("/", self._page("overview", lambda r: self.source.overview())),
            Route("/jobs", self._page("jobs", self._jobs)),
            Route("/jobs/{ref}", self._page("job", self._job)),
            Route("/workers", self._page("workers", lambda r: self.source.workers())),
            Route("/alerts", self._page("alerts", self._alerts)),
            Route("/definitions", self._page("definitions", lambda r: self.source.definitions())),
            Route("/schedules", self._page("schedules", lambda r: self.source.schedules())),
            Route("/namespaces", self._page("namespaces", lambda r: self.source.namespaces())),
            Route("/tenants", self._page("tenants", self._tenants)),
            Route("/gates", self._page("gates", lambda r: self.source.gates())),
            Route("/api/gates", self._api(lambda r: self.source.gates())),
            Route("/bulk/{verb}", self._page("bulk", self._bulk_preview)),
            Route("/api/bulk/{verb}", self._api(self._bulk_preview)),
            Route("/api/bulk/{verb}", self._verb("bulk"), methods=["POST"]),
            Route("/api/session", self._session),
            Route("/api/overview", self._api(lambda r: self.source.overview())),
            Route("/api/jobs", self._api(self._jobs)),
            Route("/api/jobs/{ref}", self._api(self._job)),
            Route("/api/workers", self._api(lambda r: self.source.workers())),
            Route("/api/alerts", self._api(self._alerts)),
            Route("/api/definitions", self._api(lambda r: self.source.definitions())),
            Route("/api/schedules", self._api(lambda r: self.source.schedules())),
            Route("/api/namespaces", self._api(lambda r: self.source.namespaces())),
            Route("/api/tenants", self._api(self._tenants)),
            Route("/api/schedules/{job}/{name}/{verb}", self._verb("schedules"), methods=["POST"]),
            # A tenant key may hold "/": the key is everything up to the last segment.
            Route("/api/tenants/{target:path}/{verb}", self._verb("tenants"), methods=["POST"]),
            *(
                Route(f"/api/{family}/{{target}}/{{verb}}", self._verb(family), methods=["POST"])
                for family in ("jobs", "definitions", "alerts")
            ),
            Mount("/static", StaticFiles(packages=[("acta.dashboard", "static")]), name="static"),
        ]
        inner = Starlette(
            routes=routes,
            exception_handlers={HTTPException: self._http_error, Exception: self._crash},
        )
        self.asgi = Guard(inner, config)

    # -- data for pages and the API -------------------------------------------------------

    def _jobs(self, request: Request) -> dict[str, Any]:
        chosen = filters.parse(request.query_params, _names(request))
        scope = self.config.tenant
        if scope is not None:
            if chosen.tenant not in (None, scope):
                raise ScopeError(f"this dashboard shows the jobs of tenant {scope!r} only")
            chosen = replace(chosen, tenant=scope)
        return self.source.jobs(chosen)

    def _job(self, request: Request) -> dict[str, Any]:
        ref = request.path_params["ref"]
        try:
            data = self.source.job(ref)
        except InvalidJobRefError:
            # A malformed ref names no job either: the same 404 as an unknown one.
            namespace = self.source.namespace
            raise JobNotFoundError(f"no job {ref[:80]!r} in namespace {namespace!r}") from None
        self._in_scope(ref, data.get("tenant"))
        return data

    def _in_scope(self, ref: str, tenant: object) -> None:
        """A job of another tenant than the one this dashboard is scoped to is not shown
        (nor changed): the same 404 as a job that does not exist."""
        if self.config.tenant is not None and tenant != self.config.tenant:
            namespace = self.source.namespace
            raise JobNotFoundError(f"no job {ref[:80]!r} in namespace {namespace!r}")

    def _bulk_request(self, verb: str, args: Any, allowed: tuple[str, ...]) -> bulk.BulkRequest:
        if verb not in bulk.VERBS:
            raise JobNotFoundError(f"there is no bulk verb {verb[:40]!r}")
        if not self.config.verb_enabled("bulk"):
            raise ScopeError(_off("bulk"))
        return bulk.check(
            verb,
            args,
            namespace=self.source.namespace,
            tenant_scope=self.config.tenant,
            now=self.app.ledger.now(),
            allowed=allowed,
        )

    def _bulk_preview(self, request: Request) -> dict[str, Any]:
        """The set a bulk verb would take, counted (a dry run: a GET changes nothing)."""
        verb = request.path_params["verb"]
        chosen = self._bulk_request(verb, request.query_params, bulk.PREVIEW_PARAMS)
        if len(_names(request)) != len(set(_names(request))):
            raise ValidationError("filter", "a parameter is given twice", "each at most once")
        matched = bulk.preview(self.app, chosen, request.state.acta_actor)
        return {
            "verb": verb,
            "matched": matched,
            "filter": chosen.shown,
            "destructive": verb in bulk.DESTRUCTIVE,
        }

    def _run_bulk(self, verb: str, args: dict[str, str], actor: str) -> Any:
        chosen = self._bulk_request(verb, args, bulk.RUN_FIELDS)
        return bulk.run(self.app, chosen, args, actor)

    def _run_verb(self, family: str, verb: str, target: str, args: Any, actor: str) -> Any:
        if family == "bulk":
            return self._run_bulk(verb, args, actor)
        if family == "jobs" and self.config.tenant is not None:
            self._in_scope(target, self.app.get(target).tenant)
        return run_verb(self.app, family, verb, target, args, actor)

    def _tenants(self, request: Request) -> dict[str, Any]:
        chosen = filters.parse_tenant_page(request.query_params, _names(request))
        return self.source.tenants(chosen.after, chosen.limit)

    def _alerts(self, request: Request) -> dict[str, Any]:
        value = request.query_params.get("include_resolved", "0")
        if value not in ("0", "1"):
            raise ValidationError("include_resolved", f"got {value!r:.40}", "1 or 0")
        return self.source.alerts(value == "1")

    # -- responses ------------------------------------------------------------------------

    async def _session(self, request: Request) -> Response:
        """The CSRF token for this browser session (and its cookie), for API clients that
        send verbs; empty while every verb family is off."""
        session, new = self.csrf.session(request)
        token = self.csrf.token(session) if self.config.verbs else ""
        response = JSONResponse({"csrf": token, "verbs": sorted(self.config.verbs)})
        if new and self.config.verbs:
            self.csrf.set_cookie(response, request, session)
        return response

    def _page(self, page: str, read: Callable[[Request], dict[str, Any]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                data = await run_in_threadpool(read, request)
            except ActaError as exc:
                return self._error_page(request, _status_of(exc), str(exc))
            return self.render(request, page, data)

        return endpoint

    def _api(self, read: Callable[[Request], dict[str, Any]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                data = await run_in_threadpool(read, request)
            except ActaError as exc:
                return JSONResponse({"error": str(exc)}, status_code=_status_of(exc))
            return JSONResponse(data)

        return endpoint

    def render(
        self, request: Request, page: str, data: dict[str, Any], status: int = 200
    ) -> Response:
        base = request.scope.get("root_path") or ""
        session, new = self.csrf.session(request)
        now = self.app.clock.now()
        context = {
            "when": lambda value, zone=None: timefmt.when(value, now, zone),
            "duration": timefmt.duration,
            "page": page,
            "base": base,
            "data": data,
            "namespace": self.source.namespace,
            "verbs": sorted(self.config.verbs),
            "csrf": self.csrf.token(session) if self.config.verbs else "",
            "refresh_ms": self.config.refresh_seconds * 1000,
            "notice": self._notice(request),
            "urlencode": urlencode,
            "pages": PAGES,
        }
        html = self.env.get_template(f"{page}.html").render(context)
        response = HTMLResponse(html, status_code=status)
        if new and self.config.verbs:
            self.csrf.set_cookie(response, request, session)
        return response

    def _error_page(
        self, request: Request, status: int, message: str, *, verb: bool = False
    ) -> Response:
        """An error as JSON for the API (and for verbs sent as JSON), else as a page."""
        api = request.url.path.startswith((request.scope.get("root_path") or "") + "/api/")
        form = request.headers.get("content-type", "").startswith(FORM)
        if api and not (verb and form):
            return JSONResponse({"error": message}, status_code=status)
        data = {"status": status, "message": message, "verb": verb}
        return self.render(request, "error", data, status)

    def _notice(self, request: Request) -> str | None:
        """A verb's message carried back by the redirect, shown only with this dashboard's
        signature: a crafted link cannot put words of its own on the page."""
        text = request.query_params.get("notice")
        sig = request.query_params.get("sig", "")
        if text is None or not self.csrf.signed(text, sig):
            return None
        return text[:300]

    def _refuse(self, request: Request, status: int, message: str) -> Response:
        return self._error_page(request, status, message, verb=True)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {404: "There is no such page.", 405: "This address does not take that method."}
        return self._error_page(
            request, exc.status_code, message.get(exc.status_code, str(exc.detail))
        )

    async def _crash(self, request: Request, exc: Exception) -> Response:
        # Never a stack trace to the browser: the host's logs have it.
        return self._error_page(request, 500, "The dashboard failed to answer; see the logs.")

    # -- verbs ----------------------------------------------------------------------------

    def _verb(self, family: str) -> Handler:
        async def endpoint(request: Request) -> Response:
            params = request.path_params
            verb = params["verb"]
            target = (
                f"{params['job']}/{params['name']}"
                if family == "schedules"
                else params.get("target", "")
            )
            if verb not in VERB_FAMILIES[family]:
                return self._refuse(request, 404, f"{family} have no verb {verb!r}.")
            if not self.config.verb_enabled(family):
                return self._refuse(request, 403, _off(family))
            form = request.headers.get("content-type", "").startswith(FORM)
            header_token = request.headers.get(HEADER)
            # Origin, cookie and a header token are checked before the body is even read.
            try:
                self.csrf.check_origin(request)
                if header_token:
                    self.csrf.check_token(request, header_token)
            except CsrfError as exc:
                return self._refuse(request, 403, f"Refused: {exc}.")
            try:
                args = body.parse(await body.read(request), form)
            except body.BodyError as exc:
                return self._refuse(request, exc.status, str(exc))
            sent = args.pop(FIELD, None)
            if not header_token:
                try:
                    self.csrf.check_token(request, sent)
                except CsrfError as exc:
                    return self._refuse(request, 403, f"Refused: {exc}.")
            actor = request.state.acta_actor
            try:
                done = await run_in_threadpool(self._run_verb, family, verb, target, args, actor)
            except (ActaError, ValueError) as exc:
                return self._refuse(request, _status_of(exc), f"Refused: {exc}")
            if not form:
                return JSONResponse({"ok": True, "message": done.message, **done.data})
            back = _safe_next(request, args.get("next"))
            sep = "&" if "?" in back else "?"
            notice = {"notice": done.message, "sig": self.csrf.sign(done.message)}
            return RedirectResponse(f"{back}{sep}{urlencode(notice)}", 303)

        return endpoint


def _off(family: str) -> str:
    return (
        f"The {family} verbs are off. Enable them with create_dashboard(..., verbs=[{family!r}])."
    )


def _names(request: Request) -> list[str]:
    """Every query parameter name sent, repeats included (``query_params.keys()`` folds them,
    which would let ``?status=a&status=b`` through as the last value); a verb's redirect back
    to a list page adds ``notice`` and ``sig``, which are the page's, not filters."""
    names = [name for name, _ in request.query_params.multi_items()]
    return [name for name in names if name not in ("notice", "sig")]


def _safe_next(request: Request, given: str | None) -> str:
    """Where a form verb sends the browser back: a path of this dashboard, nothing else."""
    base = request.scope.get("root_path") or ""
    if (
        given
        and given.startswith(base + "/")
        and not given.startswith("//")
        and "\\" not in given
        and "://" not in given
    ):
        return given
    return base + "/"


def create_dashboard(
    app: Acta,
    *,
    local_only: bool = True,
    trusted_proxies: Iterable[str] = (),
    authorize: Authorize | None = None,
    verbs: Iterable[str] = (),
    refresh_seconds: int = 5,
    tenant: str | None = None,
) -> Guard:
    """The dashboard of ``app`` as an ASGI application (mount it at any path).

    Local-only and read-only by default. ``verbs`` enables families of mutating verbs
    (``jobs``, ``definitions``, ``alerts``, ``schedules``, ``tenants``). ``local_only=False`` needs
    ``authorize``: a callable given the request that returns the actor's name, or None to
    refuse; without one this raises ConfigurationError and nothing is served.
    ``trusted_proxies``: addresses or networks whose forwarding headers are believed.
    ``tenant``: show and change only that tenant's jobs (the Jobs page, job pages, job and bulk
    verbs); the other pages stay namespace-wide.
    """
    config = build_config(
        local_only=local_only,
        trusted_proxies=trusted_proxies,
        authorize=authorize,
        verbs=verbs,
        refresh_seconds=refresh_seconds,
        tenant=tenant,
    )
    return Dashboard(app, config).asgi
