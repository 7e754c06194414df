"""RSS 2.0 and Atom feeds (being written)."""

from fastapi import APIRouter

router = APIRouter(tags=["feeds"])
