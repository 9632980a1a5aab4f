"""Helpers several plugins share: session-wide state that more than one plugin reads (the pod
constraint counts, the usage estimate). Not plugins: nothing here registers a plugin, and nothing here
imports a plugin, so no plugin depends on another (an import-linter contract in ``make lint``)."""
