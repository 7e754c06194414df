"""A reader's own data as a whole: what the data export holds and what account deletion removes.

Data-protection law gives a reader the right to a copy of what a service keeps about them and to have
it erased. Both act on every per-reader table at once, so they go through one port,
:class:`ReaderDataStore`, whose adapter knows every table; the service (``services/account_data.py``)
only decides who may ask and packs the archive.

What deletion does with each kind of row (the adapter does it in one transaction):

- removed: the account, its sessions, API tokens, one-time links, library (tags, saves, read and
  "not interested" marks, notes, followed authors, saved searches), upvotes, comments, digest
  subscriptions of the reader or of their address with their send ledger and sent-paper log, and a
  bounce record of the address;
- kept without the reader: papers they put on the daily feed stay listed (the submitter is forgotten),
  and moderation they did as an administrator stays (hidden papers and comments lose "hidden by").

Comments are deleted, not anonymised: comments here are flat (no replies hang under them, so no other
reader's thread loses its context) and a body kept under "[deleted]" would still be the reader's words.
Counts are never stored (they are counted from rows when read), so upvote and comment counts stay right.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["EXPORT_FORMAT", "DeletedRows", "ReaderDataStore", "ReaderExport"]

EXPORT_FORMAT = "paperfeed-export/1"  # the "format" field of account.json; bump on incompatible changes


@dataclass(frozen=True)
class ReaderExport:
    """Everything kept about one reader, as JSON-ready documents read in one consistent snapshot.

    ``documents`` maps a file stem (``account``, ``library``, ``comments``, ``upvotes``,
    ``submissions``, ``subscriptions``, ``topics``) to its content. No secret or digest of one is ever in it:
    not the password hash, not session ids, API tokens or their prefixes, not the private feed tokens of
    saved searches or the confirmation nonces of subscriptions. ``saved_paper_ids`` are the saved papers
    that are not hidden by an administrator, newest save first (the BibTeX file's entries).
    """

    email: str
    documents: Mapping[str, Any]
    saved_paper_ids: tuple[str, ...]


@dataclass(frozen=True)
class DeletedRows:
    """How many rows deletion removed (or detached: ``submissions``, ``moderation``) per kind."""

    counts: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class ReaderDataStore(Protocol):
    """Reads and erases all of one reader's rows."""

    def reader_export(self, user_id: int) -> ReaderExport | None:
        """The reader's data, or ``None`` when there is no such account."""
        ...

    def delete_reader(self, user_id: int) -> DeletedRows | None:
        """Delete the account and everything of it in one transaction; ``None`` when it does not exist."""
        ...
