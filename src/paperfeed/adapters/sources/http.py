"""One polite HTTP client for every network source.

Timeouts on every request, a minimum interval between requests to the same host (arXiv asks for one
request every 3 s), retries with exponential backoff and full jitter on connection errors, timeouts,
429 and 5xx, and ``Retry-After`` honoured (seconds or an HTTP date), as OAI-PMH servers send with 503.

Redirects are followed only on the host that was asked (an ``http`` to ``https`` move included, at most
:data:`MAX_REDIRECTS`): a source that sends the client to another host — a compromised or spoofed
catalogue steering it at an internal address, or a harvest walking off to whatever a redirect names —
is a :class:`~paperfeed.domain.errors.SourceUnavailable` naming both hosts, and the other host is never
asked.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx

from paperfeed.domain.errors import SourceTimeout, SourceUnavailable
from paperfeed.domain.wording import count

__all__ = [
    "MAX_REDIRECTS",
    "PoliteClient",
]

MAX_REDIRECTS = 5
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass
class PoliteClient:
    """A thin wrapper over :class:`httpx.Client` adding politeness and retries."""

    user_agent: str
    timeout: float  # PAPERFEED_HTTP_TIMEOUT (PAPERFEED_SUBMIT_TIMEOUT for a reader waiting)
    retries: int  # PAPERFEED_HTTP_RETRIES
    min_interval: Mapping[str, float]  # host -> seconds between requests (the PAPERFEED_*_DELAY settings)
    default_interval: float = 0.0
    backoff_base: float = 2.0
    backoff_max: float = 120.0
    max_retry_after: float = 600.0
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] = time.sleep
    _last: dict[str, float] = field(default_factory=dict, init=False)
    _client: httpx.Client | None = field(default=None, init=False)

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                headers={"User-Agent": self.user_agent, "Accept-Encoding": "gzip"},
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                follow_redirects=False,  # followed by _send, on the same host only
                transport=self.transport,
            )
        return self._client

    def _wait_turn(self, host: str) -> None:
        interval = self.min_interval.get(host, self.default_interval)
        last = self._last.get(host)
        if last is not None and interval > 0:
            delay = last + interval - time.monotonic()
            if delay > 0:
                self.sleep(delay)
        self._last[host] = time.monotonic()

    def get(
        self,
        url: str,
        params: Mapping[str, str] | None = None,
        *,
        ok_statuses: frozenset[int] = frozenset(),
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """GET ``url``; returns a 2xx response (or one whose status is in ``ok_statuses``).

        Raises :class:`SourceUnavailable` when the host cannot be reached or keeps failing.
        """
        return self.request("GET", url, params, ok_statuses=ok_statuses, headers=headers)

    def post_json(
        self,
        url: str,
        payload: object,
        params: Mapping[str, str] | None = None,
        *,
        ok_statuses: frozenset[int] = frozenset(),
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """POST ``payload`` as JSON (a batch lookup: reading, so retried like a GET)."""
        return self.request("POST", url, params, json=payload, ok_statuses=ok_statuses, headers=headers)

    def request(
        self,
        method: str,
        url: str,
        params: Mapping[str, str] | None = None,
        *,
        json: object = None,
        ok_statuses: frozenset[int] = frozenset(),
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One request with the host's spacing, retries and ``Retry-After``; see :meth:`get`."""
        host = urlsplit(url).netloc
        attempt = 0
        while True:
            self._wait_turn(host)
            delay: float | None
            timed_out = False
            try:
                response = self._send(method, url, params, json, headers)
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                timed_out = isinstance(exc, httpx.TimeoutException)
                delay = None
            else:
                if response.is_success or response.status_code in ok_statuses:
                    return response
                reason = f"HTTP {response.status_code}"
                if response.status_code not in _RETRY_STATUS:
                    raise SourceUnavailable(f"{host} answered {reason} for {response.request.url}")
                delay = _retry_after(response)
                if delay is not None and delay > self.max_retry_after:
                    raise SourceUnavailable(f"{host} asks to retry after {delay:.0f}s; giving up for now")
            attempt += 1
            if attempt > self.retries:
                where = httpx.URL(url, params=params) if params else url
                message = (
                    f"{host} unreachable after {count(attempt, 'attempt')} ({reason}) for {method} {where}"
                )
                if timed_out:
                    raise SourceTimeout(message, self.timeout)
                raise SourceUnavailable(message)
            if delay is None:
                delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))
            self.sleep(delay)

    def _send(
        self,
        method: str,
        url: str,
        params: Mapping[str, str] | None,
        json: object,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        """One request and the redirects it gets on its own host (see the module doc)."""
        response = self.client.request(method, url, params=params, json=json, headers=headers)
        asked = response.request.url
        for _ in range(MAX_REDIRECTS):
            following = response.next_request
            if not response.is_redirect or following is None:
                return response
            target = following.url
            if target.host != asked.host or target.port not in (asked.port, None):  # None: the default port
                response.close()
                elsewhere = target.netloc.decode()
                raise SourceUnavailable(
                    f"{asked.host} redirected {response.request.url} to another host ({elsewhere}): "
                    "not followed"
                )
            response.close()
            response = self.client.send(following)
        if response.is_redirect:
            raise SourceUnavailable(
                f"{asked.host} redirected more than {count(MAX_REDIRECTS, 'time')} for {url}"
            )
        return response

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
