"""The actions a session runs in configured order (enqueue, allocate, backfill, preempt, reclaim,
shuffle). Each has ``name`` and ``execute(session)``, walks the session only through its callbacks, and
never names or imports a plugin."""
