"""The reading groups' web family (docs/groups.md), one package:

* :mod:`.pages`: the pages and forms (``router``), which only parse and render;
* :mod:`.forms`: the one way every form is handled (a change through the group service, 303 back, a
  refusal shown beside its form with the input kept);
* :mod:`.api`: the JSON API under ``/api/groups`` (``api_router``);
* :mod:`.controls`: the "queue for a group" control's template globals, under cards and on paper pages;
* :mod:`.calendar`: a group's sessions as an iCalendar file.

Who may do what is :class:`~paperfeed.services.groups.GroupService`'s, never a route's.
"""

from __future__ import annotations

from .api import router as api_router
from .controls import TEMPLATE_GLOBALS
from .pages import router

__all__ = ["TEMPLATE_GLOBALS", "api_router", "router"]
