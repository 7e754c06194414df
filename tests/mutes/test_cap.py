"""The mute-rule cap (200 per reader or group) holds under parallel adds, on SQLite and PostgreSQL (issue
#41, finding 5: the count was read, then the rule inserted in another transaction, so parallel adds raced
a reader to 201-204 rules). Real store, real threads, a barrier so the adds really meet."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.groups import InvalidGroupInput
from paperfeed.domain.mutes import MAX_RULES, InvalidMuteRule
from paperfeed.settings import Settings

PARALLEL = 8


@pytest.fixture
def app(tmp_path: Path, db_url: str) -> Iterator[App]:
    built = build_app(Settings(data_dir=tmp_path / "data", database_url=db_url, embedding_backend="fake"))
    yield built
    built.close()


def _race(add: object, start: int) -> tuple[int, int]:
    """``PARALLEL`` adds of distinct rules at once; (added, refused)."""
    barrier = threading.Barrier(PARALLEL)

    def one(n: int) -> bool:
        barrier.wait()
        try:
            add("word", f"word{start + n}")  # type: ignore[operator]
        except (InvalidMuteRule, InvalidGroupInput):
            return False
        return True

    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(one, range(PARALLEL)))
    return results.count(True), results.count(False)


def test_parallel_adds_never_pass_a_readers_cap(app: App) -> None:
    mutes = app.readers.mutes
    app.readers.accounts.sign_up("m@example.org", None, None, client="t", base_url="http://t")
    me = app.readers.accounts.user_by_email("m@example.org").id
    for n in range(MAX_RULES - 3):
        mutes.add(me, "word", f"word{n}")
    for round_ in range(3):
        added, refused = _race(lambda kind, value: mutes.add(me, kind, value), 1000 * (round_ + 1))
        assert added + refused == PARALLEL
        assert added == (3 if round_ == 0 else 0)
        assert len(mutes.rules(me)) == MAX_RULES
    with pytest.raises(InvalidMuteRule, match="at most 200"):
        mutes.add(me, "word", "one more")
    assert mutes.add(me, "word", "word0") is not None  # one it has already: no change, no refusal
    assert len(mutes.rules(me)) == MAX_RULES


def test_parallel_adds_never_pass_a_groups_cap(app: App) -> None:
    app.readers.accounts.sign_up("o@example.org", None, None, client="t", base_url="http://t")
    owner = app.readers.accounts.user_by_email("o@example.org").id
    group = app.readers.groups.create(owner, "Capped")
    mutes = app.readers.mutes
    for n in range(MAX_RULES - 2):
        mutes.add_group(group.id, "word", f"word{n}")
    added, refused = _race(
        lambda kind, value: app.readers.groups.add_mute(owner, group.id, kind, value), 5000
    )
    assert (added, refused) == (2, PARALLEL - 2)
    assert len(mutes.group_rules(group.id)) == MAX_RULES
