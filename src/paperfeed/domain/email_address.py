"""The one check every email address passes before paperfeed keeps it or mails it.

Sign-up, sign-in links, password resets, digest subscriptions and the mail adapter all call
:func:`parse_email_address`, so an address with a NUL, a line break, an empty label (``x@probe..test``)
or any other shape no mail server should be handed is refused in one place. The syntax rules are those
of the ``email-validator`` library, with no network lookups (``check_deliverability=False``), so this
stays a pure function the domain can own.

Chosen options: ``test_environment=True`` accepts the ``.test`` top-level domain (RFC 6761 reserves it
for testing; no real mailbox can be there, so accepting it costs nothing and lets instances be tried out
with addresses such as ``ada@x.test``). Other special-use names (``.local``, ``.invalid``,
``localhost``…), quoted local parts and bracketed IP addresses are refused. Internationalised addresses
are accepted (the SMTP adapter speaks SMTPUTF8).
"""

from __future__ import annotations

__all__ = ["InvalidEmailAddress", "parse_email_address"]

MAX_INPUT = 400  # longer input is refused before parsing (a valid address has at most 254 characters)


class InvalidEmailAddress(ValueError):
    """Not a usable address; the message says why and is safe to show (callers name the field)."""


def parse_email_address(text: str) -> str:
    """The address in normal form (trimmed, Unicode NFC, all lower case), or :class:`InvalidEmailAddress`.

    Lower-casing the local part too is a choice: it is what paperfeed has always stored, so
    ``Ada@Example.org`` and ``ada@example.org`` are one account.
    """
    value = (text or "").strip()
    if not value:
        raise InvalidEmailAddress("enter an address such as name@example.org")
    if len(value) > MAX_INPUT:
        raise InvalidEmailAddress("that is too long to be an email address")
    from email_validator import EmailNotValidError, validate_email  # here: its import takes ~50 ms

    try:
        checked = validate_email(
            value,
            check_deliverability=False,
            test_environment=True,
            allow_quoted_local=False,
            allow_domain_literal=False,
            allow_display_name=False,
        )
    except EmailNotValidError as exc:
        raise InvalidEmailAddress(f"enter an address such as name@example.org ({exc})") from None
    return checked.normalized.lower()
