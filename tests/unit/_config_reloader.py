"""The config-reload tests' harness: a ConfigReloader whose ConfigMap reads answer from a script, and
the error the kubernetes client raises for an apiserver's answer (status, reason, body, headers)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from volsched.kube.configsource import ConfigMapText
from volsched.kube.errors import ApiException
from volsched.kube.health import ApiHealth
from volsched.operator.reload import ConfigReloader
from volsched.operator.settings import ConfigSettings


class _Answer:
    """What ApiException reads of an HTTP response."""

    def __init__(self, status: int, reason: str, data: bytes, headers: dict[str, str]) -> None:
        self.status, self.reason, self.data, self.headers = status, reason, data, headers


def api_error(
    status: int,
    *,
    reason: str = "x",
    body: bytes = b'{"kind":"Status"}',
    headers: dict[str, str] | None = None,
) -> ApiException:
    """The client's error for an answer ``status``."""
    return ApiException(http_resp=_Answer(status, reason, body, headers or {}))


class _Writer:
    def post_event(self, body: object) -> str | None:
        return None


def scripted_reloader(
    answers: list[ConfigMapText | Exception | None],
    *,
    health: ApiHealth | None = None,
    poll_every: float = 30.0,
) -> ConfigReloader:
    """A reloader whose each read takes the next of ``answers`` (an exception is raised; None: the
    ConfigMap is absent)."""

    def read(at_start: bool) -> ConfigMapText | None:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return ConfigReloader(
        ConfigSettings(poll_every=poll_every),
        health=health if health is not None else ApiHealth(),
        writer=_Writer(),  # type: ignore[arg-type]
        reloads=Counter("reloads", "x", ["result"], registry=CollectorRegistry()),
        read=read,
        on_load=lambda _: None,
    )
