"""What an apiserver's answer refusing one of a start's first requests (the records' key Secret read or
made, a kind's first listing) tells a person: the line ``volsched run`` exits 2 with, an
:class:`~volsched.model.errors.InputError` saying what was refused, the answer and why, or None for an
answer the start asks again (a throttling 429, a 5xx) and for what is no answer at all.

Pure: it reads an exception and returns a value; it sends, logs and raises nothing. What is particular to
one request (a listing's 404, a Secret holding no key) its caller decides before asking.
"""

from __future__ import annotations

from collections.abc import Callable

from volsched.kube.errors import ApiException, status_message
from volsched.kube.watch import ApiError
from volsched.model.errors import InputError

#: Why a 401: said the same for every request of the start.
CREDENTIALS = "the kubeconfig's credentials (or the service account's token) were not accepted"


def answer_of(exc: BaseException) -> tuple[int, str] | None:
    """An apiserver's answer as its status and what its Status said (its reason when it said nothing):
    from a listing's or watch's :class:`~volsched.kube.watch.ApiError` or a read's or write's
    :class:`~volsched.kube.errors.ApiException`. None for anything else (an outage, a timeout)."""
    if isinstance(exc, ApiError):
        return exc.status, exc.message
    if isinstance(exc, ApiException) and exc.status is not None:
        return exc.status, status_message(exc.body or "") or str(exc.reason or "")
    return None


def refused_at_start(exc: BaseException, *, said: Callable[[str], str], rights: str) -> InputError | None:
    """``exc`` as the line the start ends in, when it is an answer refusing the request (a 4xx but a
    throttling 429): ``said(answer)`` (``answer`` its status and message, ``403: pods is forbidden: ...``),
    then why: :data:`CREDENTIALS` for a 401, ``rights`` (what the user needs) for a 403. None otherwise."""
    answer = answer_of(exc)
    if answer is None or not 400 <= answer[0] < 500 or answer[0] == 429:
        return None
    status, message = answer
    why = {401: CREDENTIALS, 403: rights}.get(status)
    return InputError(said(f"{status}: {message}") + (f"; {why}" if why else ""))
