"""Mute rules of readers and of groups: keep them, and compile them into one filter per request.

A surface asks :meth:`MuteService.filter_for` once per request (one indexed read of the reader's rules)
and applies the compiled :class:`~paperfeed.domain.mutes.MuteFilter` to the candidate list it already
holds; nothing is queried per paper. A group's rules are its owner's to change and apply to the group's
pages and digest; a reader's apply to everything that reader is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.mutes import (
    MAX_RULES,
    NO_MUTES,
    InvalidMuteRule,
    MuteFilter,
    MuteRecords,
    MuteRule,
    check_rule,
    compile_rules,
)

__all__ = ["MuteService"]


@dataclass
class MuteService:
    records: MuteRecords
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def rules(self, user_id: int) -> list[MuteRule]:
        return self.records.rules(("reader", user_id))

    def add(self, user_id: int, kind: str, value: str) -> MuteRule:
        return self._add(("reader", user_id), kind, value)

    def remove(self, user_id: int, kind: str, value: str) -> bool:
        return self._remove(("reader", user_id), kind, value)

    def filter_for(self, user_id: int | None) -> MuteFilter:
        """The reader's rules compiled (:data:`NO_MUTES` for an anonymous visitor or one without rules)."""
        if user_id is None:
            return NO_MUTES
        rules = self.rules(user_id)
        return compile_rules(rules) if rules else NO_MUTES

    # -- a group's rules (the group service checks who may) ------------------------------------------------

    def group_rules(self, group_id: int) -> list[MuteRule]:
        return self.records.rules(("group", group_id))

    def add_group(self, group_id: int, kind: str, value: str) -> MuteRule:
        return self._add(("group", group_id), kind, value)

    def remove_group(self, group_id: int, kind: str, value: str) -> bool:
        return self._remove(("group", group_id), kind, value)

    def group_filter(self, group_id: int) -> MuteFilter:
        rules = self.group_rules(group_id)
        return compile_rules(rules) if rules else NO_MUTES

    # -- shared ---------------------------------------------------------------------------------------------

    def _add(self, owner: tuple[str, int], kind: str, value: str) -> MuteRule:
        rule = check_rule(kind, value)
        if self.records.add(owner, rule, self.now(), cap=MAX_RULES) is None:
            raise InvalidMuteRule("value", f"at most {MAX_RULES} mute rules; remove some first")
        return rule

    def _remove(self, owner: tuple[str, int], kind: str, value: str) -> bool:
        rule = check_rule(kind, value)
        return self.records.remove(owner, rule.kind, rule.key)
