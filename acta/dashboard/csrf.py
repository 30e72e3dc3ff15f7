"""Cross-site request forgery defences for the dashboard's verbs.

A verb is accepted only when all of these hold: it is a POST; the browser's session cookie
(random, HttpOnly, SameSite=Strict) is present; the token sent with the form or in the
``X-Acta-CSRF`` header is the HMAC of that session under a key born with this dashboard (so a
token from another session, or from before a restart, fails); ``Origin`` (or, without it,
``Referer``) names this very host; and ``Sec-Fetch-Site``, when the browser sends it, says
``same-origin``. GET never changes anything, so pages need no token to be read.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

COOKIE = "acta_dashboard_session"
HEADER = "x-acta-csrf"
FIELD = "csrf"


class CsrfError(Exception):
    """A verb request failed a CSRF check; the message names which."""


class Csrf:
    """Session cookies and their tokens for one dashboard."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def session(self, request: Request) -> tuple[str, bool]:
        """The request's session id, and whether it is new (the response must set it)."""
        current = request.cookies.get(COOKIE, "")
        if 20 <= len(current) <= 100 and current.isascii():
            return current, False
        return secrets.token_urlsafe(32), True

    def token(self, session: str) -> str:
        return hmac.new(self._key, session.encode("ascii"), hashlib.sha256).hexdigest()

    def sign(self, text: str) -> str:
        """A signature of ``text`` under this dashboard's key (for the notice a verb leaves)."""
        return hmac.new(self._key, b"notice:" + text.encode(), hashlib.sha256).hexdigest()

    def signed(self, text: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(text).encode(), signature.encode())

    def set_cookie(self, response: Response, request: Request, session: str) -> None:
        response.set_cookie(
            COOKIE,
            session,
            httponly=True,
            samesite="strict",
            secure=bool(request.state.acta_https),
            path=(request.scope.get("root_path") or "") + "/",
        )

    def check(self, request: Request, sent: str | None) -> None:
        """Raise CsrfError unless the request passes every check in the module docstring."""
        self.check_origin(request)
        self.check_token(request, sent)

    def check_origin(self, request: Request) -> None:
        """The checks that need no body (method, origin, session cookie): a verb runs them
        before it reads its body, so a cross-site request never gets the parser's time."""
        if request.method != "POST":
            raise CsrfError("verbs must be sent with POST")
        fetch_site = request.headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site != "same-origin":
            raise CsrfError(f"Sec-Fetch-Site is {fetch_site!r}; only same-origin is accepted")
        host = str(request.state.acta_host).lower()
        origin = request.headers.get("origin")
        if origin is None or origin == "null":
            referer = request.headers.get("referer")
            if referer is None:
                raise CsrfError("neither Origin nor Referer names this dashboard's origin")
            origin = referer
        if urlsplit(origin).netloc.lower() != host:
            raise CsrfError("the request comes from another origin than this dashboard")
        if not request.cookies.get(COOKIE):
            raise CsrfError("no dashboard session cookie; load a dashboard page first")

    def check_token(self, request: Request, sent: str | None) -> None:
        """The token sent must be this session's (after ``check_origin``)."""
        session = request.cookies.get(COOKIE, "")
        if (
            not (20 <= len(session) <= 100 and session.isascii())  # as session() makes them
            or not sent
            or not hmac.compare_digest(sent.encode(), self.token(session).encode())
        ):
            raise CsrfError("the CSRF token is missing or does not belong to this session")
