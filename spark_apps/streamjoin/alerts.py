"""Alerts: one message, delivered by e-mail (SMTP) and to a Slack-compatible webhook.

Both channels are configured from the environment only; a channel whose variables are unset is
skipped (logged). Delivery never raises: a failure is logged and reported in the returned
outcomes, so whoever alerts (the quality gate) keeps its own verdict and exit code.

    STREAMJOIN_SMTP_HOST          the SMTP server (unset: no e-mail)
    STREAMJOIN_SMTP_PORT          default 25
    STREAMJOIN_SMTP_FROM          the sender (default streamjoin@<host name>)
    STREAMJOIN_ALERT_EMAIL_TO     recipients, comma-separated (unset: no e-mail)
    STREAMJOIN_SMTP_USER, STREAMJOIN_SMTP_PASSWORD   log in when both are set
    STREAMJOIN_SMTP_STARTTLS      1/true/yes: STARTTLS before logging in
    STREAMJOIN_ALERT_WEBHOOK_URL  POST {"text": ...} as JSON there (Slack incoming webhooks,
                                  Mattermost, Rocket.Chat, ...; unset: no webhook)
"""

from __future__ import annotations

import json
import logging
import os
import smtplib
import socket
import urllib.request
from collections.abc import Mapping
from email.message import EmailMessage

log = logging.getLogger("streamjoin.alerts")
TIMEOUT_SECONDS = 10
SENT, SKIPPED, FAILED = "sent", "skipped", "failed"


def deliver(subject: str, text: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Send the alert on every configured channel; returns channel -> `sent` | `skipped: why` |
    `failed: why`."""
    env = os.environ if env is None else env
    return {"email": _attempt("email", send_email, subject, text, env),
            "webhook": _attempt("webhook", send_webhook, subject, text, env)}


def _attempt(channel: str, send, subject: str, text: str, env: Mapping[str, str]) -> str:
    try:
        skipped = send(subject, text, env)
    except (OSError, smtplib.SMTPException, ValueError) as error:  # refused, timed out, rejected, HTTP 4xx/5xx
        log.error("alert by %s not delivered (%s: %s): %s", channel, type(error).__name__, error, subject)
        return f"{FAILED}: {type(error).__name__}: {error}"
    if skipped:
        log.info("alert by %s skipped: %s", channel, skipped)
        return f"{SKIPPED}: {skipped}"
    log.info("alert by %s sent: %s", channel, subject)
    return SENT


def send_email(subject: str, text: str, env: Mapping[str, str]) -> str | None:
    """Send over SMTP; returns why it was skipped, or None once sent."""
    host = env.get("STREAMJOIN_SMTP_HOST", "").strip()
    recipients = [a.strip() for a in env.get("STREAMJOIN_ALERT_EMAIL_TO", "").split(",") if a.strip()]
    if not host or not recipients:
        return "STREAMJOIN_SMTP_HOST and STREAMJOIN_ALERT_EMAIL_TO are not both set"
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = env.get("STREAMJOIN_SMTP_FROM") or f"streamjoin@{socket.getfqdn()}"
    message["To"] = ", ".join(recipients)
    message.set_content(text)
    with smtplib.SMTP(host, int(env.get("STREAMJOIN_SMTP_PORT") or 25), timeout=TIMEOUT_SECONDS) as smtp:
        if env.get("STREAMJOIN_SMTP_STARTTLS", "").strip().lower() in ("1", "true", "yes"):
            smtp.starttls()
        if env.get("STREAMJOIN_SMTP_USER") and env.get("STREAMJOIN_SMTP_PASSWORD"):
            smtp.login(env["STREAMJOIN_SMTP_USER"], env["STREAMJOIN_SMTP_PASSWORD"])
        smtp.send_message(message)
    return None


def send_webhook(subject: str, text: str, env: Mapping[str, str]) -> str | None:
    """POST `{"text": ...}` (the subject, then the message); returns why it was skipped, or None."""
    url = env.get("STREAMJOIN_ALERT_WEBHOOK_URL", "").strip()
    if not url:
        return "STREAMJOIN_ALERT_WEBHOOK_URL is not set"
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"STREAMJOIN_ALERT_WEBHOOK_URL must be an http(s) URL, not '{url}'")
    body = json.dumps({"text": f"{subject}\n{text}"}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # a 4xx/5xx raises HTTPError (an OSError)
        response.read()
    return None
