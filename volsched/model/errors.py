"""Errors for bad user input (manifests, config). They carry a message a person can act on."""

from __future__ import annotations


class InputError(ValueError):
    """A user's object or config is malformed; the message names the object and the field."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source

    def __str__(self) -> str:
        return f"{self.source}: {self.message}" if self.source else self.message

    def located(self, source: str) -> InputError:
        """The same error, prefixed with where it was read (file and document)."""
        return InputError(self.message, source=source if not self.source else f"{source}: {self.source}")
