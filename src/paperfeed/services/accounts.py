"""Accounts: sign-up, sign-in (password or mailed link), verification, resets, sessions, API tokens, admin.

What the design protects against, and how:

- Stolen database: passwords are argon2id hashes; session ids, API tokens and one-time link tokens are
  random 256-bit strings stored only as SHA-256 digests (a digest of a random secret needs no salt).
- Account enumeration: sign-in, link and reset requests answer the same whether or not the address has an
  account, take about as long (a dummy argon2 check; mail goes out on a background thread), and sign-up
  mails the owner of a taken address instead of saying it is taken.
- Guessing: sign-ins are limited per client address and per account, mail requests per address and per
  account, in a sliding-window log kept in the database so every worker shares it.
- One-time links expire, work once (a conditional UPDATE) and only for their purpose; using a reset link
  signs out every session.
- Accounts claimed before their owner signs up (issue #12): a password set at sign-up is usable only once
  the address is confirmed, and only if the confirmation comes from a browser that set or proved that
  password (a "sign-up proof" bound to the account and the password hash). Any other proof of the address
  (a sign-in link, the confirmation link opened elsewhere) drops the unproven password and display name,
  so a stranger's sign-up never survives the owner's first click. A reset sets a new password anyway.
- A new password (changed or reset) revokes every API token and stops every outstanding mailed link; a
  reset also ends every session, a change every other session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from paperfeed.domain.accounts import (
    ROLES,
    AccountError,
    AccountExists,
    AccountStore,
    ApiToken,
    EmailNotVerified,
    HiddenPaper,
    InvalidCredentials,
    InvalidLink,
    LinkPurpose,
    NotFound,
    RateLimited,
    User,
    UserSummary,
    WeakPassword,
    normalize_email,
)
from paperfeed.domain.mail import Mailer, MailError, OutgoingMail
from paperfeed.domain.wording import count
from paperfeed.services.mail_limits import Limit, MailLimits, RateLimits, bucket
from paperfeed.services.mail_limits import count as count_attempt

__all__ = [
    "AccountService",
    "Confirmed",
    "Limit",
    "RateLimits",
    "SignedIn",
    "hash_secret",
]

log = logging.getLogger("paperfeed.accounts")

MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # argon2 copes with more, but nobody types more and it bounds the work per attempt
MAX_TOKENS = 50
SESSION_TOUCH = timedelta(minutes=5)  # write last_seen_at at most this often per session
TOKEN_PREFIX = "pf_"
LINK_LIFETIMES: dict[LinkPurpose, timedelta] = {
    "verify": timedelta(hours=48),
    "signin": timedelta(minutes=15),
    "reset": timedelta(hours=1),
}
_PURGE_EVERY = 600.0  # seconds between sweeps of expired rows, per process


def hash_secret(value: str) -> str:
    """The at-rest form of a session id, API token or link token: SHA-256 hex."""
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class SignedIn:
    """A new session: ``session`` is the cookie value (shown to nobody else, stored hashed)."""

    user: User
    session: str


@dataclass(frozen=True)
class Confirmed:
    """The outcome of a confirmation link.

    ``password_kept``: the sign-up's password survived because the confirming browser set or proved it;
    then the person signs in with it as usual (``signed_in`` is None). Otherwise no usable password
    remains and the link, which proves the address like a sign-in link, signed them in (``signed_in``);
    ``dropped`` says a stranger-set password was cleared (the page asks them to choose one).
    """

    user: User
    password_kept: bool
    dropped: bool
    signed_in: SignedIn | None


@dataclass
class AccountService:
    """Every account operation; web routes and the CLI only translate to and from it."""

    store: AccountStore
    mailer: Mailer
    secret: bytes
    mail_limits: MailLimits  # shared with digest sign-ups: the mail one request may cause
    site_name: str = "paperfeed"
    limits: RateLimits = field(default_factory=RateLimits)
    session_lifetime: timedelta = timedelta(days=30)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    _hasher: PasswordHasher = field(default_factory=PasswordHasher, init=False)
    _dummy_hash: str | None = field(default=None, init=False)
    _outbox: ThreadPoolExecutor | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _last_purge: float = field(default=0.0, init=False)

    # -- sign-up and verification ------------------------------------------------------------------------

    def sign_up(
        self, email: str, password: str | None, display_name: str | None, *, client: str, base_url: str
    ) -> str:
        """Create an unverified account and mail a confirmation link (same reply if the address is taken).

        Returns the sign-up proof for the browser that signed up (see :meth:`verify_email`); when the
        address is taken or no password was given it is a random decoy of the same shape, so the reply
        says nothing about the address."""
        address = normalize_email(email)
        name = clean_display_name(display_name)
        if password:
            check_password(password, address)
        self._limit("signup:ip", client, self.limits.signup_ip)
        self.mail_limits.address(address)  # each sign-up mails the address
        now = self.clock()
        hashed = self._hasher.hash(password) if password else None
        user = self.store.create_user(address, hashed, name, now)
        if user is None:
            self._send(
                OutgoingMail(
                    to=address,
                    subject=f"You already have a {self.site_name} account",
                    text=(
                        f"Someone, hopefully you, tried to sign up to {self.site_name} with this address, "
                        f"but it already has an account.\n\nSign in: {base_url}/signin\n"
                        f"Forgot your password? {base_url}/forgot\n\n"
                        "If it was not you, you can ignore this message."
                    ),
                )
            )
            return self._decoy_proof()
        self._mail_link(user, "verify", base_url)
        return self._proof(user.id, hashed) if hashed else self._decoy_proof()

    def add_confirmed(
        self, email: str, password: str | None, *, display_name: str | None = None, role: str = "user"
    ) -> User:
        """An account an administrator makes at the server's shell (``paperfeed users add``), confirmed at
        once: whoever runs it owns the instance, so no mail has to prove the address. Without a password
        the person signs in with a link (:meth:`sign_in_link`) and may set one on their account page.

        Unlike :meth:`sign_up` it says when the address is taken (:class:`AccountExists`): the shell is
        no place for enumeration, and a script must tell "made" from "was there"."""
        if role not in ROLES:
            raise AccountError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
        address = normalize_email(email)
        if password is not None:
            check_password(password, address)
        hashed = self._hasher.hash(password) if password is not None else None
        user = self.store.create_user(address, hashed, clean_display_name(display_name), self.clock())
        if user is None:
            self.check_address_free(address)
            raise AccountExists(f"{address} already has an account; nothing was changed.")  # then deleted
        self.store.confirm_address(user.id, self.clock(), drop_unproven=False)
        if role != user.role:
            self.store.set_role(user.id, role)
        return self._visible(user.id)

    def check_address_free(self, email: str) -> str:
        """The address in normal form if no account has it, else :class:`AccountExists` saying the state
        of the one that does (for ``paperfeed users add``, before it asks for a password)."""
        address = normalize_email(email)
        stored = self.store.user_by_email(address)
        if stored is None:
            return address
        state = "hidden" if stored.hidden else "confirmed" if stored.user.email_verified else "unconfirmed"
        raise AccountExists(f"{address} already has an account ({state}); nothing was changed.", state)

    def sign_in_link(self, user: User, base_url: str) -> str:
        """A one-time sign-in link for ``user``, handed to the caller instead of mailed: for an
        administrator's terminal (``paperfeed users add --link``), never for a web page."""
        url, _lifetime = self._new_link(user, "signin", base_url)
        return url

    def resend_verification(self, email: str, *, client: str, base_url: str) -> None:
        address = normalize_email(email)
        self.mail_limits.request(address, client)
        stored = self.store.user_by_email(address)
        if stored is not None and not stored.hidden and not stored.user.email_verified:
            self._mail_link(stored.user, "verify", base_url)

    def verify_email(self, token: str, *, proof: str = "") -> Confirmed:
        """Use a confirmation link. ``proof`` is the sign-up proof the confirming browser holds (if any).

        The rule (issue #12): the sign-up's password is kept only when ``proof`` matches this account and
        its current password hash, i.e. the browser that set the password (or later signed in with it) is
        the one confirming. Anyone else who can open the mail proves the address but not the password: it
        is dropped and they are signed in to choose their own. Nobody but the address's owner gets the
        link, so an attacker's password can never be confirmed by the owner's click."""
        now = self.clock()
        user_id = self.store.consume_link(hash_secret(token), "verify", now)
        if user_id is None:
            raise InvalidLink()
        stored = self.store.user_by_id(user_id)
        if stored is None or stored.hidden:
            raise InvalidLink()
        if stored.user.email_verified:  # confirmed earlier: what is there was proven then
            return Confirmed(stored.user, stored.password_hash is not None, False, None)
        keep = stored.password_hash is not None and self._proof_matches(proof, user_id, stored.password_hash)
        dropped = stored.password_hash is not None and not keep
        self._confirm(user_id, drop_unproven=not keep)
        user = self._visible(user_id)
        return Confirmed(user, keep, dropped, None if keep else self._new_session(user))

    def link_is_usable(self, token: str, purpose: LinkPurpose) -> bool:
        """For the confirmation page a link opens (the link is used by the button, never by a GET)."""
        return bool(token) and self.store.peek_link(hash_secret(token), purpose, self.clock()) is not None

    # -- sign-in ----------------------------------------------------------------------------------------

    def sign_in(self, email: str, password: str, *, client: str, base_url: str) -> SignedIn:
        """Check a password; the same error for an unknown address and a wrong password."""
        self._limit("signin:ip", client, self.limits.signin_ip)
        try:
            address = normalize_email(email)
        except AccountError:
            raise InvalidCredentials() from None
        failure = self._hit("signin:account", address, self.limits.signin_account)
        stored = self.store.user_by_email(address)
        if stored is None or stored.password_hash is None or len(password) > MAX_PASSWORD:
            self._verify(self._dummy(), password)  # take as long as a real check
            raise InvalidCredentials()
        if not self._verify(stored.password_hash, password):
            raise InvalidCredentials()
        self.store.unhit(failure)
        user = stored.user
        if stored.hidden:
            raise AccountError("This account has been suspended by an administrator.")
        password_hash = stored.password_hash
        if self._hasher.check_needs_rehash(password_hash):
            password_hash = self._hasher.hash(password)
            self.store.set_password_hash(user.id, password_hash)
        if not user.email_verified:
            try:
                self.mail_limits.request(address, client)
            except RateLimited:
                pass  # links were sent recently; say the same thing
            else:
                self._mail_link(user, "verify", base_url)
            raise EmailNotVerified(
                f"Confirm your email address first: we have sent a link to {user.email}. "
                "Open it, then sign in again.",
                proof=self._proof(user.id, password_hash),  # of the hash now stored
            )
        return self._new_session(user)

    def request_sign_in_link(self, email: str, *, client: str, base_url: str) -> None:
        """Mail a one-time sign-in link if the address has an account (the reply never says)."""
        address = normalize_email(email)
        self.mail_limits.request(address, client)
        stored = self.store.user_by_email(address)
        if stored is not None and not stored.hidden:
            self._mail_link(stored.user, "signin", base_url)

    def sign_in_with_link(self, token: str) -> SignedIn:
        user_id = self.store.consume_link(hash_secret(token), "signin", self.clock())
        if user_id is None:
            raise InvalidLink()
        # The link proves the address, not a password set before it was proven: that one is dropped.
        self._confirm(user_id, drop_unproven=True)
        return self._new_session(self._visible(user_id))

    def create_session(self, user: User) -> SignedIn:
        """A session for a user already authenticated some other way (tests, future sign-in methods)."""
        return self._new_session(user)

    def user_for_session(self, session: str) -> User | None:
        if not session:
            return None
        id_hash = hash_secret(session)
        now = self.clock()
        found = self.store.session_user(id_hash, now)
        if found is None:
            return None
        user, last_seen = found
        if now - last_seen > SESSION_TOUCH:
            self.store.touch_session(id_hash, now)
        self._maybe_purge()
        return user

    def sign_out(self, session: str) -> None:
        if session:
            self.store.delete_session(hash_secret(session))

    def sign_out_everywhere(self, user: User, *, revoke_tokens: bool = False) -> tuple[int, int]:
        """End every session of ``user`` (and their API tokens if asked); the counts ended."""
        ended = self.store.delete_sessions(user.id)
        revoked = self.store.delete_tokens(user.id) if revoke_tokens else 0
        return ended, revoked

    # -- passwords --------------------------------------------------------------------------------------

    def request_password_reset(self, email: str, *, client: str, base_url: str) -> None:
        address = normalize_email(email)
        self.mail_limits.request(address, client)
        stored = self.store.user_by_email(address)
        if stored is not None and not stored.hidden:
            self._mail_link(stored.user, "reset", base_url)

    def reset_password(self, token: str, new_password: str) -> SignedIn:
        """Set a new password with a mailed link: every session, API token and other mailed link ends,
        then a new session starts."""
        token_hash = hash_secret(token)
        now = self.clock()
        user_id = self.store.peek_link(token_hash, "reset", now)
        if user_id is None:
            raise InvalidLink()
        stored = self.store.user_by_id(user_id)
        if stored is None or stored.hidden:
            raise InvalidLink()
        check_password(new_password, stored.user.email)  # before using the link: a typo can be retried
        if self.store.consume_link(token_hash, "reset", now) != user_id:
            raise InvalidLink()
        self._confirm(user_id, drop_unproven=True)  # the new password below is the prover's own
        self.store.set_password_hash(user_id, self._hasher.hash(new_password))
        self._password_replaced(user_id, keep_session=None)
        return self._new_session(self._visible(user_id))

    def change_password(self, user: User, current: str, new: str, *, keep_session: str) -> int:
        """Change (or first set) a password; other sessions, every API token and every outstanding mailed
        link end. Returns how many sessions ended.

        An account without a password (link-only, or one whose unproven sign-up password was dropped
        when its owner proved the address) sets one without a current password."""
        stored = self.store.user_by_id(user.id)
        if stored is None:
            raise NotFound("No such account.")
        if stored.password_hash is not None and not self._verify(stored.password_hash, current):
            raise AccountError("The current password is not right.")
        check_password(new, user.email)
        self.store.set_password_hash(user.id, self._hasher.hash(new))
        return self._password_replaced(user.id, keep_session=keep_session or None)

    def has_password(self, user: User) -> bool:
        stored = self.store.user_by_id(user.id)
        return stored is not None and stored.password_hash is not None

    def set_display_name(self, user: User, display_name: str | None) -> None:
        self.store.set_display_name(user.id, clean_display_name(display_name))

    # -- API tokens -------------------------------------------------------------------------------------

    def create_api_token(self, user: User, name: str) -> tuple[ApiToken, str]:
        """A new personal token; the secret is returned here once and never again."""
        label = " ".join(name.split())[:100]
        if not label:
            raise AccountError("Give the token a name, such as the script or machine that will use it.")
        if len(self.store.list_tokens(user.id)) >= MAX_TOKENS:
            raise AccountError(
                f"You have {count(MAX_TOKENS, 'token')} already: revoke one you no longer use."
            )
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = self.store.add_token(user.id, label, hash_secret(secret), secret[:10], self.clock())
        return token, secret

    def list_api_tokens(self, user: User) -> list[ApiToken]:
        return self.store.list_tokens(user.id)

    def revoke_api_token(self, user: User, token_id: int) -> None:
        """Revoke one of ``user``'s tokens; another person's token is "not found", not "forbidden"."""
        if not self.store.delete_token(user.id, token_id):
            raise NotFound(f"You have no API token with id {token_id}.")

    def user_for_api_token(self, token: str) -> User | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        now = self.clock()
        found = self.store.token_user(hash_secret(token), now)
        if found is None:
            return None
        user, token_id, last_used = found
        if last_used is None or now - last_used > SESSION_TOUCH:
            self.store.touch_token(token_id, now)
        return user

    # -- administration ---------------------------------------------------------------------------------

    def user_by_email(self, email: str) -> User:
        stored = self.store.user_by_email(normalize_email(email))
        if stored is None:
            raise NotFound(f"No account has the address {email.strip()}.")
        return stored.user

    def user_by_id(self, user_id: int) -> User | None:
        stored = self.store.user_by_id(user_id)
        return None if stored is None or stored.hidden else stored.user

    def list_users(self) -> list[UserSummary]:
        return self.store.list_users()

    def set_role(self, email: str, role: str) -> User:
        if role not in ROLES:
            raise AccountError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
        user = self.user_by_email(email)
        self.store.set_role(user.id, role)
        return User(user.id, user.email, user.display_name, role, user.email_verified)

    def hide_user(self, user_id: int, *, by: User | None = None) -> User:
        """Hide a person: they are signed out everywhere, their tokens stop working, they cannot sign in."""
        stored = self.store.user_by_id(user_id)
        if stored is None:
            raise NotFound(f"No user with id {user_id}.")
        if stored.user.is_admin:
            raise AccountError("Administrators cannot be hidden: demote them first.")
        if by is not None and by.id == user_id:
            raise AccountError("You cannot hide yourself.")
        self.store.set_hidden(user_id, self.clock())
        self.store.delete_sessions(user_id)
        return stored.user

    def unhide_user(self, user_id: int) -> User:
        stored = self.store.user_by_id(user_id)
        if stored is None:
            raise NotFound(f"No user with id {user_id}.")
        self.store.set_hidden(user_id, None)
        return stored.user

    def hide_paper(self, paper_id: str, *, by: User | None = None, reason: str = "") -> bool:
        """Hide a paper from feeds, search, the API and its page; False if it was hidden already."""
        if not self.store.paper_exists(paper_id):
            raise NotFound(f"No paper with id {paper_id} is in this instance.")
        return self.store.hide_paper(
            paper_id, by.id if by else None, " ".join(reason.split())[:500], self.clock()
        )

    def unhide_paper(self, paper_id: str) -> bool:
        return self.store.unhide_paper(paper_id)

    def hidden_papers(self) -> list[HiddenPaper]:
        return self.store.hidden_papers()

    # -- internals --------------------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for mail still being handed to the server."""
        with self._lock:
            outbox, self._outbox = self._outbox, None
        if outbox is not None:
            outbox.shutdown(wait=True)

    def _confirm(self, user_id: int, *, drop_unproven: bool) -> None:
        """Mark the address proven; every confirmation link still out is then useless, so it is dropped."""
        now = self.clock()
        if self.store.confirm_address(user_id, now, drop_unproven=drop_unproven):
            self.store.expire_links(user_id, "verify", now)

    def _password_replaced(self, user_id: int, *, keep_session: str | None) -> int:
        """After a new password: revoke API tokens, stop mailed links, end sessions (but ``keep_session``)."""
        now = self.clock()
        for purpose in LINK_LIFETIMES:
            self.store.expire_links(user_id, purpose, now)
        self.store.delete_tokens(user_id)
        return self.store.delete_sessions(user_id, keep=hash_secret(keep_session) if keep_session else None)

    def _proof(self, user_id: int, password_hash: str) -> str:
        """The sign-up proof: a keyed digest of the account and its password hash (a new password, or
        another account, gives another proof; without the instance secret none can be made)."""
        mac = hmac.new(self.secret, f"signup-proof|{user_id}|{password_hash}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()

    def _decoy_proof(self) -> str:
        return secrets.token_urlsafe(32)  # 43 characters, like a real proof

    def _proof_matches(self, proof: str, user_id: int, password_hash: str) -> bool:
        return bool(proof) and hmac.compare_digest(
            proof.encode(), self._proof(user_id, password_hash).encode()
        )

    def _visible(self, user_id: int) -> User:
        stored = self.store.user_by_id(user_id)
        if stored is None or stored.hidden:
            raise InvalidLink()
        return stored.user

    def _new_session(self, user: User) -> SignedIn:
        session = secrets.token_urlsafe(32)
        now = self.clock()
        self.store.add_session(hash_secret(session), user.id, now, now + self.session_lifetime)
        return SignedIn(user, session)

    def _dummy(self) -> str:
        if self._dummy_hash is None:
            self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))
        return self._dummy_hash

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    def _hit(self, kind: str, value: str, limit: Limit) -> int:
        """Count an attempt in the store's log (keyed, so it holds no addresses in clear)."""
        return count_attempt(self.store, bucket(kind, value, self.secret), self.clock(), limit)

    def _limit(self, kind: str, value: str, limit: Limit) -> None:
        self._hit(kind, value, limit)

    def _maybe_purge(self) -> None:
        now = time.monotonic()
        if now - self._last_purge < _PURGE_EVERY:
            return
        self._last_purge = now
        self.store.purge(self.clock())

    def _new_link(self, user: User, purpose: LinkPurpose, base_url: str) -> tuple[str, timedelta]:
        """A new one-time link (only its digest is stored) and how long it works."""
        token = secrets.token_urlsafe(32)
        now = self.clock()
        lifetime = LINK_LIFETIMES[purpose]
        self.store.add_link(hash_secret(token), user.id, purpose, now, now + lifetime)
        path = {"verify": "/verify", "signin": "/signin/link", "reset": "/reset"}[purpose]
        return f"{base_url.rstrip('/')}{path}?token={quote(token)}", lifetime

    def _mail_link(self, user: User, purpose: LinkPurpose, base_url: str) -> None:
        url, lifetime = self._new_link(user, purpose, base_url)
        hours = lifetime.total_seconds() / 3600
        valid = (
            f"{count(hours, 'hour')}" if hours >= 2 else f"{count(lifetime.total_seconds() / 60, 'minute')}"
        )
        site = self.site_name
        subject, intro = {
            "verify": (f"Confirm your email for {site}", f"Welcome to {site}! Confirm your email address"),
            "signin": (f"Your {site} sign-in link", f"Sign in to {site}"),
            "reset": (f"Reset your {site} password", f"Choose a new password for {site}"),
        }[purpose]
        text = (
            f"{intro} by opening this link:\n\n{url}\n\n"
            f"It works once and for {valid}. If you did not ask for it, ignore this message."
        )
        self._send(OutgoingMail(to=user.email, subject=subject, text=text))

    def _send(self, mail: OutgoingMail) -> None:
        """Hand mail to a background thread, so a reply takes as long whether or not mail went out."""
        with self._lock:
            if self._outbox is None:
                self._outbox = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paperfeed-mail")
            self._outbox.submit(self._deliver, mail)

    def _deliver(self, mail: OutgoingMail) -> None:
        try:
            self.mailer.send(mail)
        except MailError as exc:
            log.error("could not send %r to %s: %s", mail.subject, mail.to, exc)
        except Exception:
            log.exception("could not send %r to %s", mail.subject, mail.to)


def check_password(password: str, email: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise WeakPassword(f"Use a password of at least {count(MIN_PASSWORD, 'character')}.")
    if len(password) > MAX_PASSWORD:
        raise WeakPassword(f"Use a password of at most {count(MAX_PASSWORD, 'character')}.")
    if password.strip().lower() in (email.lower(), email.split("@", 1)[0].lower()):
        raise WeakPassword("Do not use your email address as your password.")


def clean_display_name(name: str | None) -> str | None:
    """Collapse whitespace, drop control and format characters (bidi overrides), at most 100 characters."""
    if name is None:
        return None
    kept = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co"))
    cleaned = " ".join(kept.split())[:100]
    return cleaned or None
