"""Shared pytest set-up: the operator fixtures are a plugin, registered once here."""

pytest_plugins = ["tests.e2e.operator_fixtures"]
