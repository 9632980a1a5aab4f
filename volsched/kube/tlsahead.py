"""aiohttp's two default TLS contexts, made ahead on a thread of their own and handed to its import after
ready.

aiohttp's connector module makes two TLS contexts as it is imported (one that verifies with the system's
CAs, one that verifies nothing), reading and parsing the system's CA bundle for each, in a statement each
that the import after ready (:mod:`~volsched.operator.aside`) cannot pause, beside the first arriving
pods. volsched never uses them (its requests carry the kubeconfig's own context), but
aiohttp's client and server cannot be imported without them.

:class:`DefaultContexts` makes the same two on a thread of its own (the operator starts it at ready,
beside that import's first modules, not before ready, where reading the bundle was on the listing's way
on a busy machine; OpenSSL reads it without the interpreter's lock), and
:meth:`DefaultContexts.handed` lets aiohttp's import take them: for that import only, on the importing
thread only, and for calls made by aiohttp's connector module only, ``ssl.create_default_context()``
returns the verifying context made ahead,
``ssl.SSLContext(PROTOCOL_TLS_CLIENT)`` the other one, and that one's ``set_default_verify_paths()``
(done ahead) is not done again. aiohttp sets their options itself, as on contexts it made. Any other call
(another thread, another module, other arguments, a second one) goes to :mod:`ssl` as before, and
:mod:`ssl` is as it was once the import ends. Where the contexts are not made in time, or aiohttp was
imported already, nothing is handed: aiohttp makes its own.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["AHEAD", "DefaultContexts"]

log = logging.getLogger("volsched.operator")

#: The module whose calls take the contexts made ahead.
AIOHTTP_CONNECTOR = "aiohttp.connector"


class DefaultContexts:
    """aiohttp's default TLS contexts made ahead (:meth:`start`) and handed to its import (:meth:`handed`).
    ``handed_over`` counts what its import took: the verifying context, the other one, and the CA reading
    skipped for it (3 when all was taken)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._made = threading.Event()
        self._verified: ssl.SSLContext | None = None
        self._unverified: ssl.SSLContext | None = None
        self.handed_over = 0

    def start(self) -> None:
        """Make the two contexts on a daemon thread of their own (once; not when aiohttp is imported)."""
        if self._thread is not None or AIOHTTP_CONNECTOR in sys.modules:
            return
        self._thread = threading.Thread(target=self._make, name="volsched-tls-ahead", daemon=True)
        self._thread.start()

    def _make(self) -> None:
        try:
            verified = ssl.create_default_context()
            unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            unverified.set_default_verify_paths()
        except Exception as exc:  # aiohttp makes its own, and says what fails
            log.debug("aiohttp's default TLS contexts not made ahead: %r", exc)
        else:
            self._verified, self._unverified = verified, unverified
        finally:
            self._made.set()

    @contextlib.contextmanager
    def handed(self, *, wait: float) -> Iterator[None]:
        """Within the block, on this thread, aiohttp's connector module takes the contexts made ahead
        (waited for ``wait`` seconds at most when still being made). Meant around aiohttp's import."""
        if self._thread is None or not self._made.wait(wait) or AIOHTTP_CONNECTOR in sys.modules:
            yield
            return
        verified, unverified = self._verified, self._unverified
        self._verified = self._unverified = None  # handed once
        if verified is None or unverified is None:
            yield
            return
        importer = threading.get_ident()
        cls = ssl.SSLContext
        create = ssl.create_default_context
        new = cls.__dict__["__new__"]
        own_paths = cls.__dict__.get("set_default_verify_paths")
        paths = cls.set_default_verify_paths
        left = {"verified": verified, "unverified": unverified}
        skip: list[ssl.SSLContext] = [unverified]

        def aiohttps(frame: Any) -> bool:
            """The call is aiohttp's connector's, on the importing thread."""
            return threading.get_ident() == importer and frame.f_globals.get("__name__") == AIOHTTP_CONNECTOR

        def create_default_context(*args: Any, **kwargs: Any) -> ssl.SSLContext:
            if not args and not kwargs and "verified" in left and aiohttps(sys._getframe(1)):
                self.handed_over += 1
                return left.pop("verified")
            return create(*args, **kwargs)

        def make(klass: type[ssl.SSLContext], *args: Any, **kwargs: Any) -> ssl.SSLContext:
            if (
                klass is cls
                and args == (ssl.PROTOCOL_TLS_CLIENT,)
                and not kwargs
                and "unverified" in left
                and aiohttps(sys._getframe(1))
            ):
                self.handed_over += 1
                return left.pop("unverified")
            made: ssl.SSLContext = new.__func__(klass, *args, **kwargs)
            return made

        def set_default_verify_paths(context: ssl.SSLContext) -> None:
            if skip and context is skip[0] and aiohttps(sys._getframe(1)):
                skip.clear()  # read ahead: once is all aiohttp asked for
                self.handed_over += 1
                return
            paths(context)

        ssl.create_default_context = create_default_context
        cls.__new__ = staticmethod(make)  # type: ignore[assignment]
        cls.set_default_verify_paths = set_default_verify_paths  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            ssl.create_default_context = create
            cls.__new__ = new  # type: ignore[method-assign]
            if own_paths is None:
                del cls.set_default_verify_paths
            else:
                cls.set_default_verify_paths = own_paths  # type: ignore[method-assign]


#: The process's: started by the operator from ready on (once the cache is listed, beside the import
#: after ready that takes them), no longer as ``volsched run`` starts.
AHEAD = DefaultContexts()
