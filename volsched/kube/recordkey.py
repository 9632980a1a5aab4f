"""The key the scheduler signs its pods' bound-under records with (``admitted.sign``): 32 random bytes in
a Secret of the operator's namespace (:data:`SECRET`), made by the first replica that finds none (a
create; a 409 means another made it first: read that one), read by every replica before its first
listing. Its ``previous`` key, if any, still verifies (a key rotated). The Secret's creation time says
which pods may carry an unsigned record (made before it, by a scheduler before signing:
``admitted.RecordKeys.since``). Never logged. Design: docs/tenancy.md "The signed record"."""

from __future__ import annotations

import contextlib
import secrets

from volsched.kube.secret import Conflict, SecretStore
from volsched.model.admitted import RecordKeys

#: The Secret's name (in the operator's namespace): the operator's Role may get it by this name.
SECRET = "volsched-record-key"
#: Its data: the key that signs, and the one before it (verifies only).
CURRENT, PREVIOUS = "key", "previous"
#: Fewer bytes than this is no key (a Secret written by hand, wrongly): refused, not used.
_LEAST = 32


def load(store: SecretStore) -> RecordKeys:
    """The keys in ``store``'s Secret, made with a new key when there is none. Raises ValueError when the
    Secret holds no usable key (it is not made over: a replica may sign with it)."""
    found = store.read()
    if found is None:
        with contextlib.suppress(Conflict):  # another replica made it first: its key is the one
            store.create({CURRENT: secrets.token_bytes(_LEAST)})
        found = store.read()
        if found is None:
            raise ValueError(f"Secret {store.namespace}/{store.name} was made and is gone")
    data = found[0]
    keys = [data[name] for name in (CURRENT, PREVIOUS) if name in data]
    if not keys or any(len(k) < _LEAST for k in keys):
        raise ValueError(
            f"Secret {store.namespace}/{store.name} holds no key of at least {_LEAST} bytes under "
            f"{CURRENT!r} (and {PREVIOUS!r}, if given)"
        )
    if store.created <= 0.0:
        raise ValueError(f"Secret {store.namespace}/{store.name} has no creationTimestamp")
    return RecordKeys(keys=tuple(keys), since=store.created)
