"""The topic picks' state-changing routes for the authorization matrix (see tests/support/authz.py).

Picking acts on the reader's *own* picks: every signed-in actor may, anonymous visitors may not;
``changed`` looks at everyone's picks. The matrix's store has no topics built, so ``setup`` writes one
live topic row (as a build would) before each request.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, insert, select

from paperfeed.adapters.store.embeddings import encode_vector
from paperfeed.adapters.store.schema_topics import topic_picks, topics
from tests.support.authz import SIGNIN, Actor, Route, World

__all__ = ["ROUTES"]

TOPIC = 41
OWN_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 303, "other": 303, "admin": 303}
OWN_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 200, "other": 200, "admin": 200}


def _topic(w: World, *, picked_by_all: bool) -> dict[str, Any]:
    """One live topic; no picks, or one by each signed-in actor."""
    import numpy as np

    with w.app.core.store.engine.begin() as conn:
        conn.execute(delete(topic_picks))
        if conn.execute(select(topics.c.id).where(topics.c.id == TOPIC)).first() is None:
            conn.execute(
                insert(topics).values(
                    id=TOPIC,
                    label="matrix topic",
                    words=["matrix"],
                    size=0,
                    representatives=[],
                    centroid=encode_vector(np.ones(4, dtype=np.float32) / 2),
                    x=0.0,
                    y=0.0,
                )
            )
        if picked_by_all:
            now = datetime.now(UTC)
            for user in w.users.values():
                conn.execute(insert(topic_picks).values(user_id=user.id, topic_id=TOPIC, picked_at=now))
    return {"topic": TOPIC}


def _picks(w: World) -> int:
    with w.app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(topic_picks)).scalar_one())


ROUTES = [
    Route(
        "pick a topic (page)",
        "POST",
        f"/topics/{TOPIC}/pick",
        expect=OWN_PAGE,
        form={"next": "/topics"},
        setup=lambda w: _topic(w, picked_by_all=False),
        changed=lambda w, ctx: _picks(w) == 1,
    ),
    Route(
        "unpick a topic (page)",
        "POST",
        f"/topics/{TOPIC}/unpick",
        expect=OWN_PAGE,
        form={"next": "/for-you"},
        setup=lambda w: _topic(w, picked_by_all=True),
        changed=lambda w, ctx: _picks(w) == len(w.users) - 1,  # only the actor's own pick went
    ),
    Route(
        "pick a topic (API)",
        "PUT",
        f"/api/me/topics/{TOPIC}",
        expect=OWN_API,
        json={},
        setup=lambda w: _topic(w, picked_by_all=False),
        changed=lambda w, ctx: _picks(w) == 1,
    ),
    Route(
        "unpick a topic (API)",
        "DELETE",
        f"/api/me/topics/{TOPIC}",
        expect=OWN_API,
        json={},
        setup=lambda w: _topic(w, picked_by_all=True),
        changed=lambda w, ctx: _picks(w) == len(w.users) - 1,
    ),
]
