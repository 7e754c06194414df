"""People and their credentials: the user every other area refers to, and the errors accounts raise.

Secrets never live here in clear: sessions, API tokens and one-time links are random strings the
user holds; the store keeps only their SHA-256 digests (see ``services/accounts.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from .email_address import InvalidEmailAddress, parse_email_address
from .wording import count

__all__ = [
    "ROLES",
    "AccountError",
    "AccountExists",
    "AccountStore",
    "ApiToken",
    "EmailNotVerified",
    "HiddenPaper",
    "Hit",
    "InvalidCredentials",
    "InvalidEmail",
    "InvalidLink",
    "LinkPurpose",
    "NotFound",
    "RateLimited",
    "RateLog",
    "StoredUser",
    "User",
    "UserSummary",
    "WeakPassword",
    "normalize_email",
]

ROLES = ("user", "admin")
LinkPurpose = Literal["verify", "signin", "reset", "delete"]  # delete: confirms account deletion


@dataclass(frozen=True)
class User:
    """A signed-in person as the rest of the app sees them (never their password hash)."""

    id: int
    email: str
    display_name: str | None
    role: str
    email_verified: bool

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def label(self) -> str:
        """What to call them on a page: their display name, else the part of the address before the @."""
        return self.display_name or self.email.split("@", 1)[0]


@dataclass(frozen=True)
class StoredUser:
    """A user row with what only the account service may see."""

    user: User
    password_hash: str | None
    hidden: bool
    created_at: datetime


@dataclass(frozen=True)
class UserSummary:
    """One line of ``paperfeed users list`` and the admin page."""

    user: User
    hidden: bool
    created_at: datetime
    sessions: int
    tokens: int


@dataclass(frozen=True)
class ApiToken:
    """A personal API token as listed (the secret itself is shown once, at creation)."""

    id: int
    name: str
    prefix: str  # the first characters of the token, so a person can tell their tokens apart
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True)
class Hit:
    """The outcome of counting an attempt against a rate limit."""

    id: int | None  # the counted attempt, or None when refused
    retry_after: float = 0.0  # seconds until an attempt is allowed again (when refused)

    @property
    def allowed(self) -> bool:
        return self.id is not None


@dataclass(frozen=True)
class HiddenPaper:
    paper_id: str
    hidden_by: int | None
    reason: str
    hidden_at: datetime


class AccountError(Exception):
    """Something a person did that accounts refuse; the message is safe to show them."""


class InvalidEmail(AccountError):
    pass


class AccountExists(AccountError):
    """An administrator asked for an account at an address that has one already (``paperfeed users add``;
    sign-up never says so, it mails the address's owner instead). ``state``: confirmed, unconfirmed or
    hidden."""

    def __init__(self, message: str, state: str = "") -> None:
        super().__init__(message)
        self.state = state


class WeakPassword(AccountError):
    pass


class InvalidCredentials(AccountError):
    """Wrong email or password: deliberately the same message for both (no account enumeration)."""

    def __init__(self) -> None:
        super().__init__("That email and password do not match an account.")


class EmailNotVerified(AccountError):
    """Right password, but the address is not confirmed yet (a new link has been sent).

    ``proof`` is what the browser that knew the password keeps, so that confirming there keeps it
    (see :meth:`~paperfeed.services.accounts.AccountService.verify_email`)."""

    def __init__(self, message: str, proof: str = "") -> None:
        super().__init__(message)
        self.proof = proof


class InvalidLink(AccountError):
    """A one-time link that is unknown, used, expired or meant for something else."""

    def __init__(self) -> None:
        super().__init__("This link is invalid or has expired. Links work once and only for a while.")


class NotFound(AccountError):
    pass


class RateLimited(AccountError):
    """Too many attempts; ``retry_after`` says in how many seconds the next one is allowed."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        minutes = -(-self.retry_after // 60)
        when = (
            f"{count(self.retry_after, 'second')}"
            if self.retry_after < 120
            else f"{count(minutes, 'minute')}"
        )
        super().__init__(f"Too many attempts. Try again in {when}.")


def normalize_email(text: str) -> str:
    """The address in normal form, or :class:`InvalidEmail` naming the field (rules: ``email_address``)."""
    try:
        return parse_email_address(text)
    except InvalidEmailAddress as exc:
        raise InvalidEmail(f"Email: {exc}.") from None


class RateLog(Protocol):
    """A sliding-window log of attempts, shared by every worker through the database."""

    def hit(self, bucket: str, now: datetime, window_seconds: float, limit: int) -> Hit:
        """Count an attempt if fewer than ``limit`` were counted in the window, else refuse it."""
        ...

    def unhit(self, hit_id: int) -> None:
        """Take a counted attempt back (another bucket refused the request it was part of)."""
        ...


class AccountStore(Protocol):
    """Persistence for accounts; every secret arrives here already hashed."""

    def create_user(
        self, email: str, password_hash: str | None, display_name: str | None, now: datetime
    ) -> User | None:
        """The new user, or None when the address is taken."""
        ...

    def user_by_id(self, user_id: int) -> StoredUser | None: ...

    def user_by_email(self, email: str) -> StoredUser | None: ...

    def list_users(self) -> list[UserSummary]: ...

    def set_password_hash(self, user_id: int, password_hash: str | None) -> None: ...

    def set_display_name(self, user_id: int, display_name: str | None) -> None: ...

    def mark_verified(self, user_id: int, now: datetime) -> None: ...

    def confirm_address(self, user_id: int, now: datetime, *, drop_unproven: bool) -> bool:
        """Mark an unconfirmed address confirmed, in one statement; with ``drop_unproven`` also clear
        what the sign-up set before the address was proven (password, display name). False if the
        address was confirmed already (then nothing changes)."""
        ...

    def set_role(self, user_id: int, role: str) -> None: ...

    def set_hidden(self, user_id: int, hidden_at: datetime | None) -> None: ...

    # sessions
    def add_session(self, id_hash: str, user_id: int, now: datetime, expires_at: datetime) -> None: ...

    def session_user(self, id_hash: str, now: datetime) -> tuple[User, datetime] | None:
        """The visible user of a live session and when it was last seen (expired or hidden: None)."""
        ...

    def touch_session(self, id_hash: str, now: datetime) -> None: ...

    def delete_session(self, id_hash: str) -> None: ...

    def delete_sessions(self, user_id: int, *, keep: str | None = None) -> int: ...

    # API tokens
    def add_token(self, user_id: int, name: str, token_hash: str, prefix: str, now: datetime) -> ApiToken: ...

    def token_user(self, token_hash: str, now: datetime) -> tuple[User, int, datetime | None] | None:
        """The visible user holding a token, the token's id and when it was last used."""
        ...

    def touch_token(self, token_id: int, now: datetime) -> None: ...

    def list_tokens(self, user_id: int) -> list[ApiToken]: ...

    def delete_token(self, user_id: int, token_id: int) -> bool: ...

    def delete_tokens(self, user_id: int) -> int: ...

    # one-time links
    def add_link(
        self, token_hash: str, user_id: int, purpose: LinkPurpose, now: datetime, expires_at: datetime
    ) -> None: ...

    def consume_link(self, token_hash: str, purpose: LinkPurpose, now: datetime) -> int | None:
        """Mark the link used (once, atomically) and give its user id; None if unusable."""
        ...

    def peek_link(self, token_hash: str, purpose: LinkPurpose, now: datetime) -> int | None:
        """The user id of a usable link, without using it (for the confirmation page)."""
        ...

    def expire_links(self, user_id: int, purpose: LinkPurpose, now: datetime) -> None: ...

    # rate limits (a sliding-window log shared by every worker through the database)
    def hit(self, bucket: str, now: datetime, window_seconds: float, limit: int) -> Hit:
        """Count an attempt if fewer than ``limit`` were counted in the window, else refuse it."""
        ...

    def unhit(self, hit_id: int) -> None:
        """Take back a counted attempt (a sign-in that succeeded does not count as a failure)."""
        ...

    def purge(self, now: datetime) -> None:
        """Drop expired sessions, used or expired links and old rate-limit entries."""
        ...

    # moderation
    def hide_paper(self, paper_id: str, by: int | None, reason: str, now: datetime) -> bool: ...

    def unhide_paper(self, paper_id: str) -> bool: ...

    def hidden_papers(self) -> list[HiddenPaper]: ...

    def paper_exists(self, paper_id: str) -> bool: ...
