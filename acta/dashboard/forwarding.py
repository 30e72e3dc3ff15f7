"""Who the client is, as a trusted reverse proxy tells it: RFC 7239 ``Forwarded``,
``X-Forwarded-For`` and ``X-Real-IP``, read the same careful way.

Each header is a list of hops, oldest at the left; every proxy appends the peer it saw. The
entries at the left were written by whoever sent the request, so a header is walked from the
right, skipping the proxies the dashboard trusts: the first hop that is not one of them is the
client (when every hop is trusted, the leftmost is). A hop that is ``unknown``, obfuscated
(``_name``), empty or malformed stops the walk: the client cannot be established.

The rule across headers: every client-naming header the proxy sent must name the same client.
None at all, one that cannot be established, or two that disagree, and the guard knows nothing
about the client (the caller refuses a local-only request then). Repeated header lines count
as one list, in order, as HTTP says they do.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Headers = Sequence[tuple[bytes, bytes]]

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PAIR = re.compile(rf'[ \t]*({_TOKEN})=({_TOKEN}|"(?:[^"\\]|\\.)*")[ \t]*')
_PORT = r"(?::(?:[0-9]{1,5}|_[A-Za-z0-9._-]+))?"
_V4_NODE = re.compile(rf"^([0-9]{{1,3}}(?:\.[0-9]{{1,3}}){{3}}){_PORT}$")
_V6_NODE = re.compile(rf"^\[([0-9A-Fa-f:.]+)\]{_PORT}$")

CLIENT_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")


class ForwardingError(ValueError):
    """A forwarding header that cannot be read; the message says where it breaks."""


@dataclass(frozen=True, slots=True)
class Established:
    """What the proxy's headers say: the client (None when it cannot be established, with
    ``problem`` saying why), the host and scheme the client asked for when a header says so,
    and every host name the request carries anywhere (for the local-only Host check)."""

    client: Address | None
    problem: str | None
    host: str | None
    https: bool
    named_hosts: tuple[str, ...]


def combined(headers: Headers, name: bytes) -> str | None:
    """Every line of one header as a single list (None when it is absent)."""
    lines = [v.decode("latin-1") for k, v in headers if k.lower() == name]
    return None if not lines else ", ".join(lines)


def parse_forwarded(text: str) -> list[dict[str, str]]:
    """The elements of a ``Forwarded`` value, parameters lower-cased and values unquoted."""
    elements: list[dict[str, str]] = [{}]
    pos = 0
    while True:
        pair = _PAIR.match(text, pos)
        if pair is not None:
            name, value = pair[1].lower(), pair[2]
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            if name in elements[-1]:
                raise ForwardingError(f"{name}= is given twice in one element")
            elements[-1][name] = value
            pos = pair.end()
        else:
            pos = len(text) - len(text[pos:].lstrip(" \t"))
        if pos == len(text):
            return elements
        if text[pos] == ",":
            elements.append({})
        elif text[pos] != ";":
            raise ForwardingError(f"unexpected text at {text[pos : pos + 20]!r}")
        pos += 1


def node(value: str | None) -> Address | None:
    """An RFC 7239 node (``192.0.2.1``, ``"192.0.2.1:80"``, ``"[2001:db8::1]:80"``) as an
    address; None for ``unknown``, an obfuscated ``_name``, a host name or anything else."""
    if value is None:
        return None
    for pattern in (_V4_NODE, _V6_NODE):
        found = pattern.match(value)
        if found is not None:
            try:
                return ipaddress.ip_address(found[1])
            except ValueError:
                return None
    return None


def loose_address(value: str) -> Address | None:
    """An ``X-Forwarded-For`` or ``X-Real-IP`` entry: a bare address, or a node with a port."""
    value = value.strip()
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return node(value)


def walk(
    hops: Sequence[str | None],
    read: Callable[[str | None], Address | None],
    trusted: Sequence[Network],
) -> tuple[int, Address] | None:
    """The client's index and address, right to left past trusted proxies (None: unknown)."""
    for index in range(len(hops) - 1, -1, -1):
        address = read(hops[index])
        if address is None:
            return None
        if not any(address in net for net in trusted):
            return index, address
    first = read(hops[0]) if hops else None
    return None if first is None else (0, first)


def establish(headers: Headers, trusted: Sequence[Network]) -> Established:
    """The client, host and scheme behind a trusted proxy (see the module docstring)."""
    clients: list[tuple[str, Address | None]] = []
    problem: str | None = None
    host: str | None = None
    https = False
    named: list[str] = []
    text = combined(headers, b"forwarded")
    if text is not None:
        try:
            elements = parse_forwarded(text)
        except ForwardingError as exc:
            elements, problem = [], f"Forwarded is malformed ({exc})"
        found = walk([e.get("for") for e in elements], node, trusted)
        clients.append(("Forwarded", None if found is None else found[1]))
        named += [e["host"] for e in elements if "host" in e]
        if found is not None:
            element = elements[found[0]]
            host = element.get("host")
            https = element.get("proto", "").lower() == "https"
    text = combined(headers, b"x-forwarded-for")
    if text is not None:
        found = walk(text.split(","), lambda e: loose_address(e or ""), trusted)
        clients.append(("X-Forwarded-For", None if found is None else found[1]))
    text = combined(headers, b"x-real-ip")
    if text is not None:
        clients.append(("X-Real-IP", None if "," in text else loose_address(text)))
    text = combined(headers, b"x-forwarded-host")
    if text is not None:
        hosts = [h.strip() for h in text.split(",")]
        named += hosts
        host = host if host is not None else hosts[0]
    text = combined(headers, b"x-forwarded-proto")
    if text is not None:
        https = https or text.split(",")[0].strip().lower() == "https"
    addresses = {address for _, address in clients}
    unknown = [name for name, address in clients if address is None]
    if problem is None and not clients:
        problem = f"the proxy sent none of {', '.join(CLIENT_HEADERS)}"
    elif problem is None and unknown:
        problem = f"{unknown[0]} does not name a client address"
    elif problem is None and len(addresses) > 1:
        problem = f"{' and '.join(name for name, _ in clients)} name different clients"
    client = None if problem is not None else next(iter(addresses))
    return Established(client, problem, host, https, tuple(named))
