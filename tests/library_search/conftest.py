"""Search my library: the real app on a real SQLite store, mail to the recording SMTP server (aiosmtpd).

The fixtures are the accounts suite's (``site``, ``app``, ``new_browser``, ``mailbox``): a few synthetic
papers imported by the real import code, browsers with their own cookie jars.
"""

from __future__ import annotations

from tests.accounts.conftest import app, mailbox, new_browser, settings, site  # noqa: F401
