"""The plugins a session's tiers hold. Each has ``name``, ``on_session_open`` and ``on_session_close``,
and only registers callbacks on the session's extension points. No plugin imports another; what several
read lives in :mod:`volsched.plugins.shared`."""
