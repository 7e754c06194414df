"""The digests wing: subscriptions (double opt-in, preferences, unsubscribe links) and the digests
themselves, composed into the send ledger and sent exactly once; their records."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from paperfeed.bootstrap.catalogue import CatalogueWing
from paperfeed.bootstrap.core import Core
from paperfeed.bootstrap.mail import MailWing
from paperfeed.bootstrap.readers import ReadersWing
from paperfeed.bootstrap.search import SearchWing

if TYPE_CHECKING:
    from paperfeed.adapters.store.digests import SqlDigestStore
    from paperfeed.services.digest import SubscriptionService
    from paperfeed.services.digest_send import DigestService
    from paperfeed.services.group_digest import GroupDigests

__all__ = ["DigestsWing"]


class DigestsWing:
    def __init__(
        self, core: Core, mail: MailWing, catalogue: CatalogueWing, search: SearchWing, readers: ReadersWing
    ) -> None:
        self.core = core
        self.mail = mail
        self.catalogue = catalogue
        self.search = search
        self.readers = readers

    @cached_property
    def records(self) -> SqlDigestStore:
        """Digest subscriptions, the send ledger, bounces (and the sender's lease)."""
        from paperfeed.adapters.store.digests import SqlDigestStore

        return SqlDigestStore(self.core.engine())

    @cached_property
    def subscriptions(self) -> SubscriptionService:
        """Digest subscriptions: double opt-in, preferences and unsubscribe links."""
        from paperfeed.services.digest import SubscriptionService

        mail = self.mail
        return SubscriptionService(
            self.records,
            mail.mailer,
            mail.signer,
            mail.renderers,
            owners=self.readers.library,
            limits=mail.limits,
        )

    @cached_property
    def sender(self) -> DigestService:
        """Composes due digests into the send ledger and sends them exactly once."""
        from paperfeed.domain.digest import Section, SectionProvider
        from paperfeed.services.digest_personal import AlertsSection, AuthorsSection, ForYouSection
        from paperfeed.services.digest_sections import CategorySection, TrendingSection
        from paperfeed.services.digest_send import DigestService, DigestSettings

        catalogue, readers = self.catalogue, self.readers
        providers: dict[Section, SectionProvider] = {
            Section.trending: TrendingSection(catalogue.feeds),
            Section.categories: CategorySection(self.records, catalogue.visible),
            Section.for_you: ForYouSection(readers.recommendations),
            Section.alerts: AlertsSection(readers.library, self.search.alerts),
            Section.authors: AuthorsSection(readers.library),
        }
        return DigestService(
            self.records,
            catalogue.visible,
            providers,
            self.mail.mailer,
            self.mail.renderer,
            DigestSettings(base_url=self.core.public_url),
            activity=catalogue.feed_queries,
            rising=catalogue.topic_rising,
            mutes=readers.mutes,
            groups=self.groups,
        )

    @cached_property
    def groups(self) -> GroupDigests:
        """Reading groups' weekly digests, composed into the same send ledger (docs/groups.md)."""
        from paperfeed.adapters.store.groups import SqlGroupStore
        from paperfeed.services.group_digest import GroupDigests, GroupDigestSettings

        s = self.core.settings
        return GroupDigests(
            SqlGroupStore(self.core.engine()),
            self.records,
            self.catalogue.visible,
            self.search.alerts,
            self.readers.mutes,
            self.mail.signer,
            settings=GroupDigestSettings(self.core.public_url, s.group_digest_weekday, s.group_digest_hour),
        )
