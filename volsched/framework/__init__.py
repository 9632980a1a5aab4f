"""The session engine, in import order (lowest first): ``config`` (Volcano-shaped scheduler config) and
``decisions`` (what a session hands back: Bind, Evict, Admit, Status, status and events); ``points``
(the Plugin contract, the ExtensionPoints a plugin sees, the tables and their tier-wise combination);
``nodeviews`` (nodes evaluated for a task); ``session`` (state and mutations, the Action contract) and ``messages`` (decision data
rendered as text, for the edges); ``plugin``
(plugin arguments) and ``statement`` (allocate/pipeline/evict, committed or discarded whole);
``registry`` (actions and plugins by name, ``load_config``); ``runner`` (open, run, close a session).
It never imports an action or a plugin (the registry loads them by name)."""
