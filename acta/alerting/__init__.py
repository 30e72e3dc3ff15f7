"""Alert channels and routing: where sys.alerts sends notices of open alerts."""

from acta.alerting.channels import CallableChannel, Channel, LoggingChannel, WebhookChannel
from acta.alerting.notice import Notice
from acta.alerting.routing import Alerting, Route, alerting_of

__all__ = [
    "Alerting",
    "CallableChannel",
    "Channel",
    "LoggingChannel",
    "Notice",
    "Route",
    "WebhookChannel",
    "alerting_of",
]
