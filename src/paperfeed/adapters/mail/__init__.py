"""Mailers: SMTP (:class:`SmtpMailer`), or ``.eml`` files in the outbox folder when no server is set."""

from __future__ import annotations

from .outbox import OutboxMailer
from .smtp import SmtpConfig, SmtpMailer, SmtpSession

__all__ = ["OutboxMailer", "SmtpConfig", "SmtpMailer", "SmtpSession"]
