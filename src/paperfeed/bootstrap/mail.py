"""The mail wing: the mailer, what the outbox kept, digest link signing and mail rendering, and the mail
limits every door that sends mail counts against (accounts and digest sign-ups alike)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.core import Core

if TYPE_CHECKING:
    from pathlib import Path

    from paperfeed.adapters.mail import SmtpConfig
    from paperfeed.domain.digest_links import LinkSigner
    from paperfeed.domain.digest_mail import DigestRenderer, DigestRenderers
    from paperfeed.domain.mail import KeptMail, OutgoingMail, SessionMailer
    from paperfeed.services.mail_limits import MailLimits
    from paperfeed.settings_model import SettingsModel

__all__ = ["MailWing", "smtp_config"]


def smtp_config(s: SettingsModel, host: str) -> SmtpConfig:
    """Where and how to reach the SMTP server ``host`` (``PAPERFEED_SMTP_*``)."""
    from paperfeed.adapters.mail import SmtpConfig

    return SmtpConfig(
        host=host,
        sender=s.mail_from,
        port=s.smtp_port,
        security=s.smtp_security,
        username=s.smtp_username,
        password=s.smtp_password.get_secret_value() if s.smtp_password else None,
        timeout=s.smtp_timeout,
        ca_file=s.smtp_ca_file,
    )


class MailWing:
    def __init__(self, core: Core) -> None:
        self.core = core

    @property
    def kept(self) -> bool:
        """No mail server (``PAPERFEED_SMTP_HOST``): mail is kept in :attr:`outbox_folder`, not sent."""
        return not self.core.settings.smtp_host

    @property
    def outbox_folder(self) -> Path:
        return self.core.data_dir / "outbox"

    @cached_property
    def mailer(self) -> SessionMailer:
        """SMTP when ``PAPERFEED_SMTP_HOST`` is set; otherwise ``.eml`` files in ``<data_dir>/outbox``."""
        from paperfeed.adapters.mail import OutboxMailer, SmtpMailer

        s = self.core.settings
        if not s.smtp_host:
            return OutboxMailer(self.outbox_folder, s.mail_from)
        return SmtpMailer(smtp_config(s, s.smtp_host))

    def describe_mailer(self) -> str:
        """Where mail goes, in words (``paperfeed digest send``)."""
        describe = getattr(self.mailer, "describe", None)
        return str(describe()) if callable(describe) else type(self.mailer).__name__

    def kept_mail(self) -> list[KeptMail]:
        """What the outbox kept, oldest first, with its links decoded (``paperfeed mail outbox``)."""
        from paperfeed.adapters.mail.outbox import read_outbox

        return read_outbox(self.outbox_folder)

    def eml_bytes(self, mail: OutgoingMail) -> bytes:
        """``mail`` as the ``.eml`` file the mailer would send (for previews written to a file)."""
        from paperfeed.adapters.mail.message import build_message, to_bytes

        return to_bytes(build_message(mail, self.core.settings.mail_from), utf8=True, linesep="\n")

    @cached_property
    def signer(self) -> LinkSigner:
        """Signs the confirm / preferences / one-click unsubscribe links of digest mail."""
        from paperfeed.domain.digest_links import LinkSigner

        return LinkSigner(self.core.secret_key)

    @cached_property
    def renderers(self) -> DigestRenderers:
        """Digest and subscription mail (Jinja templates), by the base URL its links point under."""
        from paperfeed.adapters.mail.digest_render import JinjaDigestRenderers

        return JinjaDigestRenderers(self.signer)

    @property
    def renderer(self) -> DigestRenderer:
        """The renderer whose links point under the public URL (digests)."""
        return self.renderers.for_base(self.core.public_url)

    @cached_property
    def limits(self) -> MailLimits:
        """How much mail one client and one address can cause, counted in the store (every worker)."""
        from paperfeed.adapters.store.accounts import SqlAccountStore
        from paperfeed.services.mail_limits import MailLimits

        return MailLimits(SqlAccountStore(self.core.engine()), self.core.secret_key)
