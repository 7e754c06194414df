"""The settings' defaults, for tests that build a configuration type or an adapter themselves.

Every setting has one default, in ``settings_model.py``; the types it feeds keep none of their own
(tests/test_settings_defaults_once.py). A test that needs "whatever ships" takes it from here, never from
a literal that could drift from the product; ``bootstrap``'s mapping functions (``search_settings``,
``embedder_config``, ...) turn these into the configuration types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperfeed.adapters.embed import EmbedderConfig
from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.bootstrap.indexes import embedder_config as configured_embedder
from paperfeed.settings_model import SettingsModel

if TYPE_CHECKING:
    from paperfeed.adapters.topic_model import SklearnTopicModeller

__all__ = ["DEFAULTS", "comma_list", "embedder_config", "polite_client", "topic_modeller"]

DEFAULTS = SettingsModel()  # no environment: the shipped defaults (data_dir is never written through it)


def comma_list(value: str) -> list[str]:
    """A comma-separated setting's names, as bootstrap reads them."""
    return [n.strip() for n in value.split(",") if n.strip()]


def polite_client(
    user_agent: str = "paperfeed-test", *, min_interval: Mapping[str, float] | None = None, **kw: Any
) -> PoliteClient:
    """A :class:`PoliteClient` with the shipped timeout and retries unless ``kw`` says otherwise, and no
    host paced unless ``min_interval`` names it."""
    options: dict[str, Any] = {"timeout": DEFAULTS.http_timeout, "retries": DEFAULTS.http_retries, **kw}
    return PoliteClient(user_agent=user_agent, min_interval=dict(min_interval or {}), **options)


def embedder_config(data_dir: Path, **fields: Any) -> EmbedderConfig:
    """The shipped embedding settings for a data folder (its adopted model, none in a fresh folder), all
    cores, with ``fields`` replaced (``backend=``, ``cache_dir=``, ``threads=``, ...)."""
    config = configured_embedder(DEFAULTS.model_copy(update={"data_dir": data_dir}), threads=None)
    return replace(config, **fields)


def topic_modeller(**kw: Any) -> SklearnTopicModeller:
    """The shipped clustering and layout (``PAPERFEED_TOPICS_METHOD``, ``_LAYOUT``), ``kw`` overriding."""
    from paperfeed.adapters.topic_model import SklearnTopicModeller  # scikit-learn: only where needed

    options: dict[str, Any] = {"layout": DEFAULTS.topics_layout, **kw}
    return SklearnTopicModeller(options.pop("method", DEFAULTS.topics_method), **options)
