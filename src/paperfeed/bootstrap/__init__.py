"""The composition root: the one place that turns settings into concrete adapters and services.

A small core (``core.py``: settings, the stores, the secret, the public URL, the HTTP client, closing)
and eight wings, each a module that builds one family of services from the wings below it, in this
order from the bottom (the ``wings`` contract of import-linter keeps it):

    mail → indexes → catalogue → sources → search → readers → digests → maintenance

The :class:`App` holds the core and one attribute per wing, each built on first use, so a command pays
for the wings it touches. A surface reaches a service as ``app.<wing>.<service>``; the adapters a wing
holds are for the wings and for tests. docs/architecture.md has the table of what each wing builds.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.core import Core

if TYPE_CHECKING:
    from collections.abc import Callable

    from paperfeed.bootstrap.catalogue import CatalogueWing
    from paperfeed.bootstrap.digests import DigestsWing
    from paperfeed.bootstrap.indexes import IndexesWing
    from paperfeed.bootstrap.mail import MailWing
    from paperfeed.bootstrap.maintenance import MaintenanceWing
    from paperfeed.bootstrap.readers import ReadersWing
    from paperfeed.bootstrap.search import SearchWing
    from paperfeed.bootstrap.sources import SourcesWing
    from paperfeed.settings_model import SettingsModel

__all__ = ["App", "build_app"]


class App:
    """The core and the wings of one process; close it when done."""

    def __init__(self, settings: SettingsModel) -> None:
        self.core = Core(settings)

    @property
    def settings(self) -> SettingsModel:
        return self.core.settings

    @cached_property
    def mail(self) -> MailWing:
        from paperfeed.bootstrap.mail import MailWing

        return MailWing(self.core)

    @cached_property
    def indexes(self) -> IndexesWing:
        from paperfeed.bootstrap.indexes import IndexesWing

        return IndexesWing(self.core)

    @cached_property
    def catalogue(self) -> CatalogueWing:
        from paperfeed.bootstrap.catalogue import CatalogueWing

        return CatalogueWing(self.core, self.indexes)

    @cached_property
    def sources(self) -> SourcesWing:
        from paperfeed.bootstrap.sources import SourcesWing

        return SourcesWing(self.core, self.indexes, self.catalogue)

    @cached_property
    def search(self) -> SearchWing:
        from paperfeed.bootstrap.search import SearchWing

        return SearchWing(self.core, self.indexes, self.catalogue)

    @cached_property
    def readers(self) -> ReadersWing:
        from paperfeed.bootstrap.readers import ReadersWing

        return ReadersWing(self.core, self.mail, self.indexes, self.catalogue, self.sources, self.search)

    @cached_property
    def digests(self) -> DigestsWing:
        from paperfeed.bootstrap.digests import DigestsWing

        return DigestsWing(self.core, self.mail, self.catalogue, self.search, self.readers)

    @cached_property
    def maintenance(self) -> MaintenanceWing:
        from paperfeed.bootstrap.maintenance import MaintenanceWing

        return MaintenanceWing(self.core, self.indexes, self.catalogue, self.sources, self.digests)

    def close(self) -> None:
        self.core.close()


def build_app(settings: SettingsModel | None = None) -> App:
    """The composition root for ``settings`` (default: the environment's, read by pydantic-settings)."""
    if settings is None:
        from paperfeed.settings import Settings

        settings = Settings()
    return App(settings)


def topics_daily_in_child(
    settings: SettingsModel, *, report: Callable[[str], None]
) -> dict[str, int | float | str]:
    """The topics step in the child process :meth:`CatalogueWing.topics_daily` starts: an app of the same
    settings builds or places the topics, and goes with the child."""
    app = build_app(settings)
    try:
        return app.catalogue.topics.daily(report)
    finally:
        app.close()
