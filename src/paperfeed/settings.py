"""Typed settings, read from ``PAPERFEED_*`` environment variables (and CLI flags that override them).

The fields live on :class:`paperfeed.settings_model.SettingsModel` (see there why); this adds
pydantic-settings' environment source to them.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict

from paperfeed.settings_model import ENV_PREFIX, SettingsModel, default_data_dir, default_model_cache

__all__ = ["Settings", "SettingsModel", "default_data_dir", "default_model_cache"]


class Settings(BaseSettings, SettingsModel):
    """Everything configurable about a paperfeed instance, from the environment. See docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")
