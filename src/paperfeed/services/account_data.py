"""A reader's data export and self-service account deletion (the data-protection rights of access and
erasure).

Export: a zip named ``paperfeed-export-<handle>-<date>.zip`` holding ``account.json``, ``library.json``,
``library.bib``, ``comments.json``, ``upvotes.json``, ``submissions.json``, ``subscriptions.json`` and
``topics.json`` (the topics picked for "For you")
(see :class:`~paperfeed.domain.account_data.ReaderExport` for what is never in it).

Deletion asks the person to prove again that they are who the session says, so a session left open on
a shared computer (or stolen) cannot erase an account:

- with a password: the current password (failures are rate-limited per account, like sign-in);
- without one (sign-in by mailed link only): a link mailed to the address, valid for 30 minutes, once,
  for this purpose only, opened while signed in to the same account.

Then one transaction removes everything (see :mod:`paperfeed.domain.account_data`); the caller ends the
browser's session.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import secrets
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from paperfeed.domain.account_data import DeletedRows, ReaderDataStore, ReaderExport
from paperfeed.domain.accounts import (
    AccountError,
    AccountStore,
    InvalidLink,
    NotFound,
    RateLimited,
    User,
)
from paperfeed.domain.mail import Mailer, MailError, OutgoingMail
from paperfeed.domain.models import Paper
from paperfeed.domain.ports import PaperLookup
from paperfeed.domain.wording import count

__all__ = ["DELETE_LINK_LIFETIME", "AccountDataService", "ExportArchive", "WrongPassword", "export_handle"]

DELETE_LINK_LIFETIME = timedelta(minutes=30)
_MAX_PASSWORD = 1024
_PASSWORD_FAILURES = (10, 15 * 60.0)  # failed deletion passwords per account per window (as sign-in)
_DELETE_MAILS = (3, 60 * 60.0)  # deletion links mailed per account per hour


class WrongPassword(AccountError):
    def __init__(self) -> None:
        super().__init__("The password is not right; nothing was deleted.")


@dataclass(frozen=True)
class ExportArchive:
    filename: str
    content: bytes


def export_handle(email: str, user_id: int) -> str:
    """The ``<handle>`` of the archive's name: the address's local part in safe ASCII (a file name and a
    ``Content-Disposition`` header must not carry quotes, slashes or control characters)."""
    local = email.split("@", 1)[0]
    folded = unicodedata.normalize("NFKD", local).encode("ascii", "ignore").decode().lower()
    handle = re.sub(r"[^a-z0-9._-]+", "-", folded).strip(".-")[:40]
    return handle or f"reader{user_id}"


def _json(value: object) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode()


def _link_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()  # as every one-time link is stored


@dataclass
class AccountDataService:
    """Export and deletion for the signed-in reader; web routes and the CLI only translate."""

    store: ReaderDataStore
    accounts: AccountStore
    papers: PaperLookup  # the saved papers' BibTeX (hidden ones too: they are the reader's own saves)
    bibtex: Callable[[Paper], str]
    mailer: Mailer
    secret: bytes
    site_name: str = "paperfeed"
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    _hasher: PasswordHasher = field(default_factory=PasswordHasher, init=False)

    # -- export -------------------------------------------------------------------------------------------

    def export(self, user: User) -> ExportArchive:
        data = self.store.reader_export(user.id)
        if data is None:
            raise NotFound("No such account.")
        return ExportArchive(
            f"paperfeed-export-{export_handle(data.email, user.id)}-{self.clock().date().isoformat()}.zip",
            self._zip(data),
        )

    def _zip(self, data: ReaderExport) -> bytes:
        found = self.papers.get_papers(list(data.saved_paper_ids))
        bib = "\n".join(self.bibtex(found[p]) + "\n" for p in data.saved_paper_ids if p in found)
        buffer = io.BytesIO()
        stamp = self.clock().astimezone(UTC).timetuple()[:6]
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for stem, document in data.documents.items():
                archive.writestr(
                    zipfile.ZipInfo(f"{stem}.json", stamp), _json(document), zipfile.ZIP_DEFLATED
                )
            archive.writestr(zipfile.ZipInfo("library.bib", stamp), bib.encode(), zipfile.ZIP_DEFLATED)
        return buffer.getvalue()

    # -- deletion -----------------------------------------------------------------------------------------

    def has_password(self, user: User) -> bool:
        stored = self.accounts.user_by_id(user.id)
        return stored is not None and stored.password_hash is not None

    def mail_deletion_link(self, user: User, base_url: str) -> None:
        """Mail the address a link that confirms deleting the account (accounts without a password)."""
        self._limit("delete-mail", user.id, _DELETE_MAILS)
        token = secrets.token_urlsafe(32)
        now = self.clock()
        self.accounts.expire_links(user.id, "delete", now)  # only the newest link works
        self.accounts.add_link(_link_hash(token), user.id, "delete", now, now + DELETE_LINK_LIFETIME)
        minutes = int(DELETE_LINK_LIFETIME.total_seconds() // 60)
        text = (
            f"Someone signed in to your {self.site_name} account asked to delete it, with your library, "
            f"notes, comments, upvotes and digest subscription.\n\nTo delete it, open this link while signed "
            f"in and press the button:\n\n{base_url}/account/delete?token={quote(token)}\n\n"
            f"It works once and for {count(minutes, 'minute')}. If you did not ask for this, ignore "
            "this message: "
            "nothing is deleted, and you may want to sign out every session from your account page."
        )
        subject = f"Confirm deleting your {self.site_name} account"
        try:
            self.mailer.send(OutgoingMail(to=user.email, subject=subject, text=text))
        except MailError as exc:
            raise AccountError(f"The confirmation mail could not be sent ({exc}). Try again later.") from None

    def deletion_link_usable(self, user: User, token: str) -> bool:
        if not token or len(token) > 200:
            return False
        return self.accounts.peek_link(_link_hash(token), "delete", self.clock()) == user.id

    def delete_account(self, user: User, *, password: str = "", token: str = "") -> DeletedRows:
        """Check the re-authentication, then delete everything of ``user`` in one transaction."""
        stored = self.accounts.user_by_id(user.id)
        if stored is None:
            raise NotFound("No such account.")
        if stored.password_hash is not None:
            failure = self._limit("delete-password", user.id, _PASSWORD_FAILURES)
            if (
                not password
                or len(password) > _MAX_PASSWORD
                or not self._verify(stored.password_hash, password)
            ):
                raise WrongPassword()
            self.accounts.unhit(failure)
        else:
            # Peek first, so a link for someone else is not used up by a wrong session.
            if not self.deletion_link_usable(user, token):
                raise InvalidLink()
            if self.accounts.consume_link(_link_hash(token), "delete", self.clock()) != user.id:
                raise InvalidLink()  # used meanwhile by a concurrent request
        return self.delete_user(user.id)

    def delete_user(self, user_id: int) -> DeletedRows:
        """Delete an account with no questions asked (``paperfeed users delete`` for administrators)."""
        deleted = self.store.delete_reader(user_id)
        if deleted is None:
            raise NotFound("No such account.")
        return deleted

    # -- helpers ------------------------------------------------------------------------------------------

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    def _limit(self, kind: str, user_id: int, limit: tuple[int, float]) -> int:
        key = hmac.new(self.secret, f"{user_id}".encode(), hashlib.sha256).hexdigest()[:40]
        count, seconds = limit
        hit = self.accounts.hit(f"{kind}:{key}", self.clock(), seconds, count)
        if hit.id is None:
            raise RateLimited(int(-(-hit.retry_after // 1)))
        return hit.id
