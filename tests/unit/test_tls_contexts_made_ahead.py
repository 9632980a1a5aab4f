"""aiohttp's two default TLS contexts made before ready and taken by its import after ready: the import
takes the very contexts made ahead (so it reads no CA bundle itself) and they are what aiohttp makes
(verify mode, host name check, options, protocol, the CAs read); nothing but aiohttp's connector on the
importing thread takes them, and :mod:`ssl` is as it was once the import ends. aiohttp is imported in a
fresh interpreter (this one may have imported it already)."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import textwrap
import threading

from volsched.kube.tlsahead import DefaultContexts

IMPORTED_AHEAD = textwrap.dedent(
    """
    import json, ssl, sys
    from volsched.kube.tlsahead import DefaultContexts

    ahead = DefaultContexts()
    ahead.start()
    ahead._made.wait(60)
    made = (ahead._verified, ahead._unverified)
    with ahead.handed(wait=60):
        import aiohttp.web
    import aiohttp.connector as c

    def traits(ctx):
        return [ctx.verify_mode, ctx.check_hostname, int(ctx.options), ctx.protocol, ctx.cert_store_stats()]

    print(json.dumps({
        "taken": [c._SSL_CONTEXT_VERIFIED is made[0], c._SSL_CONTEXT_UNVERIFIED is made[1]],
        "handed_over": ahead.handed_over,
        "as_aiohttp_makes": [
            traits(c._SSL_CONTEXT_VERIFIED) == traits(c._make_ssl_context(True)),
            traits(c._SSL_CONTEXT_UNVERIFIED) == traits(c._make_ssl_context(False)),
        ],
        "ssl_as_before": "set_default_verify_paths" not in ssl.SSLContext.__dict__
        and ssl.create_default_context.__module__ == "ssl",
    }))
    """
)


def test_aiohttps_import_takes_the_contexts_made_ahead_as_it_would_make_them() -> None:
    out = subprocess.run(
        [sys.executable, "-c", IMPORTED_AHEAD], capture_output=True, text=True, check=True, timeout=300
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["taken"] == [True, True]
    assert got["handed_over"] == 3  # both contexts, and the unverifying one's CAs not read again
    assert got["as_aiohttp_makes"] == [True, True]
    assert got["ssl_as_before"] is True


def test_no_other_caller_takes_them_and_ssl_is_as_it_was_after() -> None:
    create, new = ssl.create_default_context, ssl.SSLContext.__dict__["__new__"]
    ahead = DefaultContexts()
    ahead._thread = threading.current_thread()  # made here, not on a thread, for the test
    ahead._make()
    made = (ahead._verified, ahead._unverified)
    assert made[0] is not None and made[1] is not None
    elsewhere: list[ssl.SSLContext] = []
    with ahead.handed(wait=1):
        mine = [ssl.create_default_context(), ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)]  # not aiohttp's
        mine[1].set_default_verify_paths()
        worker = threading.Thread(target=lambda: elsewhere.append(ssl.create_default_context()))
        worker.start()
        worker.join()
        made[1].set_default_verify_paths()  # not aiohttp's call: done as asked
    assert all(ctx is not m for ctx in (*mine, *elsewhere) for m in made)
    assert mine[1].cert_store_stats()["x509_ca"] > 0  # read as asked
    assert ahead.handed_over == 0
    assert ssl.create_default_context is create and ssl.SSLContext.__dict__["__new__"] is new
    assert "set_default_verify_paths" not in ssl.SSLContext.__dict__
    with ahead.handed(wait=1):  # handed once: a second import takes nothing
        assert ssl.create_default_context is create


def test_without_contexts_made_nothing_is_handed() -> None:
    ahead = DefaultContexts()  # never started: aiohttp makes its own
    create = ssl.create_default_context
    with ahead.handed(wait=1):
        assert ssl.create_default_context is create
