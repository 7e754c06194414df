"""Typed settings, read from ``PAPERFEED_*`` environment variables (and CLI flags that override them)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "default_data_dir"]


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/paperfeed``, i.e. ``~/.local/share/paperfeed`` on most systems."""
    import os

    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "paperfeed"


class Settings(BaseSettings):
    """Everything configurable about a paperfeed instance. See docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="PAPERFEED_", extra="ignore")

    data_dir: Path = Field(
        default_factory=default_data_dir, description="Folder for the database and indexes."
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file paperfeed.db in the data folder."
    )
    # Sources
    arxiv_oai_url: str = Field(default="https://oaipmh.arxiv.org/oai", description="arXiv OAI-PMH endpoint.")
    arxiv_api_url: str = Field(
        default="https://export.arxiv.org/api/query", description="arXiv API endpoint."
    )
    hf_api_url: str = Field(default="https://huggingface.co/api", description="Hugging Face API base URL.")
    http_timeout: float = Field(default=30.0, gt=0, description="Seconds before an HTTP request gives up.")
    http_retries: int = Field(default=4, ge=0, le=20, description="Retries for a failed HTTP request.")
    arxiv_delay: float = Field(
        default=3.0,
        ge=0,
        description="Seconds between arXiv requests (arXiv asks for one request every 3 s).",
    )
    hf_delay: float = Field(default=1.0, ge=0, description="Seconds between Hugging Face requests.")
    contact_email: str | None = Field(
        default=None, description="Contact address sent in the User-Agent, as arXiv asks of harvesters."
    )
    batch_size: int = Field(default=2000, ge=1, le=50_000, description="Papers per import transaction.")

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+pysqlite:///{self.data_dir / 'paperfeed.db'}"

    def user_agent(self) -> str:
        from paperfeed import __version__

        contact = f"; mailto:{self.contact_email}" if self.contact_email else ""
        return f"paperfeed/{__version__} (+https://github.com/paperfeed/paperfeed{contact})"
