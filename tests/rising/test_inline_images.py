"""Inline images in outgoing mail (``adapters/mail/message.py``): the HTML alternative becomes a
multipart/related of the HTML and its images, on the classic path and on the SMTPUTF8 one alike."""

from __future__ import annotations

import email
import email.policy
import io

import pytest
from PIL import Image

from paperfeed.adapters.mail.message import build_message, to_bytes
from paperfeed.adapters.mail.plot_png import bar_png
from paperfeed.domain.mail import InlineImage, OutgoingMail

SENDER = "paperfeed <digest@example.org>"


@pytest.mark.parametrize("to", ["reader@example.org", "lesérin@example.org"])
def test_images_travel_with_the_html_part(to: str) -> None:
    png = bar_png([0.1, 0.2, 0.4])
    mail = OutgoingMail(
        to=to,
        subject="s",
        text="plain",
        html='<p>html <img src="cid:plot-1@example.org" alt="a plot"></p>',
        images=(InlineImage("plot-1@example.org", png, "png", "plot-1.png"),),
    )
    raw = to_bytes(build_message(mail, SENDER), utf8=True)
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    kinds = [p.get_content_type() for p in parsed.walk()]
    assert kinds == ["multipart/alternative", "text/plain", "multipart/related", "text/html", "image/png"]
    image = next(p for p in parsed.walk() if p.get_content_type() == "image/png")
    assert image["Content-ID"] == "<plot-1@example.org>"
    assert image.get_content_disposition() == "inline"
    assert image.get_filename() == "plot-1.png"
    assert image.get_content() == png
    with Image.open(io.BytesIO(image.get_content())) as opened:
        assert opened.format == "PNG"
    body = parsed.get_body(preferencelist=("html",))
    assert body is not None
    assert "cid:plot-1@example.org" in body.get_content()


def test_without_images_nothing_changes() -> None:
    mail = OutgoingMail(to="reader@example.org", subject="s", text="plain", html="<p>html</p>")
    parsed = email.message_from_bytes(to_bytes(build_message(mail, SENDER)), policy=email.policy.default)
    assert [p.get_content_type() for p in parsed.walk()] == [
        "multipart/alternative",
        "text/plain",
        "text/html",
    ]


@pytest.mark.parametrize(
    "image",
    [
        InlineImage("plot@example.org>\r\nBcc: victim@example.org", b"x"),
        InlineImage("plot@example.org", b"x", "png\r\nX-Evil: 1"),
        InlineImage("plot@example.org", b"x", "png", 'a.png"; evil="1'),
    ],
)
def test_an_image_field_cannot_inject_headers(image: InlineImage) -> None:
    mail = OutgoingMail(to="reader@example.org", subject="s", text="t", html="<p>h</p>", images=(image,))
    with pytest.raises(ValueError, match="inline image field"):
        build_message(mail, SENDER)
