"""Signed links in digest mail: confirm a subscription, open its preferences, unsubscribe in one click.

A token is ``<payload>.<mac>``: the payload names the subscription (and, for confirmation, the nonce of
the request being confirmed, so only the latest confirmation mail works); the MAC is HMAC-SHA256 under a
key derived from the instance secret *and the purpose*, so an unsubscribe token cannot open the
preferences page and vice versa. Unsubscribe and preferences links never expire (RFC 8058 wants a
one-click link that still works in an old mail); rotating ``PAPERFEED_SECRET_KEY`` invalidates all of them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from paperfeed.domain.digest import LinkPurpose

__all__ = ["InvalidToken", "LinkSigner"]

_MAC_BYTES = 16


class InvalidToken(ValueError):
    """A link token that was not made here for this purpose (or was altered, or is no longer current)."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LinkSigner:
    """Makes and checks the tokens of digest links under one instance secret."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the link secret must be at least 16 bytes")
        self._root = hmac.new(secret, b"paperfeed digest links v1", hashlib.sha256).digest()

    def _mac(self, purpose: LinkPurpose, payload: str) -> bytes:
        key = hmac.new(self._root, purpose.encode(), hashlib.sha256).digest()
        return hmac.new(key, payload.encode(), hashlib.sha256).digest()[:_MAC_BYTES]

    def sign(self, purpose: LinkPurpose, subscription_id: int, nonce: str = "") -> str:
        payload = f"{subscription_id}:{nonce}" if nonce else str(subscription_id)
        return f"{_b64(payload.encode())}.{_b64(self._mac(purpose, payload))}"

    def verify(self, purpose: LinkPurpose, token: str) -> tuple[int, str]:
        """The subscription id and nonce of a token made for ``purpose``; else :class:`InvalidToken`."""
        if not isinstance(token, str) or len(token) > 300 or token.count(".") != 1:
            raise InvalidToken("this link is incomplete or damaged")
        head, mac = token.split(".")
        try:
            payload = _unb64(head).decode("ascii")
            given = _unb64(mac)
        except (ValueError, UnicodeDecodeError):
            raise InvalidToken("this link is incomplete or damaged") from None
        if not hmac.compare_digest(given, self._mac(purpose, payload)):
            raise InvalidToken("this link is not valid here (or it was cut short)")
        ident, _, nonce = payload.partition(":")
        if not ident.isdigit():
            raise InvalidToken("this link is incomplete or damaged")
        return int(ident), nonce
