"""The key the scheduler signs its pods' bound-under records with (``admitted.sign``): 32 random bytes in
a Secret of the operator's namespace (:data:`SECRET`), made by the first replica that finds none (a
create; a 409 means another made it first: read that one), read by every replica before its first
listing (:func:`load`). Its ``previous`` key, if any, still verifies (a key rotated). The Secret's
creation time (or :data:`SINCE`, when it was put back) says which pods may carry an unsigned record
(made before it, by a scheduler before signing: ``admitted.RecordKeys.since``). While a replica runs,
:class:`KeyKeeper` keeps the Secret holding the key it signs with: the leader puts it back when it is
deleted or changed. Never logged. Design: docs/tenancy.md "The signed record"."""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from volsched.kube.lister import WatchedKind
from volsched.kube.secret import Conflict, SecretStore
from volsched.model.admitted import RecordKeys
from volsched.model.decode import parse_time
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.scalars import rfc3339
from volsched.model.vocabulary import API_GROUP
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")

#: The Secret's name (in the operator's namespace): the operator's Role may get it by this name.
SECRET = "volsched-record-key"
#: Its data: the key that signs, and the one before it (verifies only).
CURRENT, PREVIOUS = "key", "previous"
#: Fewer bytes than this is no key (a Secret written by hand, wrongly): refused, not used.
_LEAST = 32
#: On the Secret when a replica put it back (made again, or written over): since when its key signs (an
#: RFC 3339 time, the first Secret's ``creationTimestamp``). The one made again is newer than the pods
#: signed with that key, and an unsigned record is taken only on a pod made before the key.
SINCE = f"{API_GROUP}/record-key-since"
#: The kind the Secret's watch lists and watches (in the operator's namespace, by its name alone).
SECRETS = WatchedKind("Secret", "", "v1", "secrets", True)
#: Seconds before a leader that failed to put the Secret back tries again.
MEND_AGAIN = 5.0
#: The reasons of the Events on the Secret a leader put back: made again or given its key back
#: (deleted, or left without a usable key), or its new key kept beside the one held (changed).
RESTORED, KEPT = "RecordKeyRestored", "RecordKeyKept"


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
    keys = usable(found[0])
    if keys is None:
        raise ValueError(
            f"Secret {store.namespace}/{store.name} holds no key of at least {_LEAST} bytes under "
            f"{CURRENT!r} (and {PREVIOUS!r}, if given)"
        )
    if store.created <= 0.0:
        raise ValueError(f"Secret {store.namespace}/{store.name} has no creationTimestamp")
    return RecordKeys(keys=keys, since=_since(store))


def usable(data: Mapping[str, bytes]) -> tuple[bytes, ...] | None:
    """The keys a Secret's ``data`` holds (:data:`CURRENT` first, then :data:`PREVIOUS`), or None when it
    holds no usable one (none, or one too short)."""
    keys = tuple(data[name] for name in (CURRENT, PREVIOUS) if name in data)
    if not keys or any(len(k) < _LEAST for k in keys):
        return None
    return keys


def _since(store: SecretStore) -> float:
    """Since when the Secret's key signs: :data:`SINCE` where a replica put it back (never later than
    its ``creationTimestamp``), else that."""
    noted = store.annotations.get(SINCE)
    if noted:
        with contextlib.suppress(InputError):
            since = parse_time(noted, where=f"Secret {store.name}")
            if 0.0 < since < store.created:
                return since
    return store.created


def _data(obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A watched Secret's ``data``, decoded (a value that is not base64 is left out)."""
    raw = obj.get("data")
    data: dict[str, bytes] = {}
    for k, v in raw.items() if isinstance(raw, Mapping) else ():
        with contextlib.suppress(binascii.Error, TypeError, ValueError):
            data[str(k)] = base64.b64decode(str(v), validate=True)
    return data


class KeyKeeper:
    """The keys a running replica holds (:meth:`hold`: as :func:`load` read them), kept in their Secret
    while it runs (note18 Found 6). A new key made at the next start would leave every running pod's
    record unverified (each an orphan counted in its namespace's default queue), so: the Secret deleted,
    or left with no usable key, the leader puts back the keys it holds; its key changed to another, the
    leader keeps the new one as :data:`CURRENT` and the one it signed with as :data:`PREVIOUS` (both
    verify: only two are kept). Each time a log line and an Event on the Secret (``tell``). A Secret
    that holds the key it signs with (a rotation: a new key first, it as previous) is taken as it is:
    ``adopt`` is given its keys (the new one signs). A follower only adopts; the leader of later puts
    back what it found owed (:meth:`due`, :meth:`mend` from the session loop). :meth:`watched` takes the
    Secret's watch events (any thread). The simulator has none."""

    def __init__(
        self,
        *,
        leading: Callable[[], bool],
        adopt: Callable[[RecordKeys], None],
        tell: Callable[[str, str, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``leading``: whether this replica may write now (the Lease's). ``tell(reason, message, uid)``:
        an Event on the Secret of that uid."""
        self.leading, self.adopt, self.tell, self.clock = leading, adopt, tell, clock
        self.store: SecretStore | None = None
        #: The keys held (the first signs), since when they sign.
        self.keys: RecordKeys | None = None
        #: The Secret does not hold the key this replica signs with: the leader puts it back.
        self.owed = False
        #: Times the Secret was put back or written over by this replica.
        self.mended = 0
        self._seen: dict[str, bytes] | None = None  # its data as last shown (None: deleted)
        self._version = ""  # its resourceVersion as last shown
        self._shown = False  # whether anything was shown since :meth:`hold`
        self._next_try = 0.0
        self._said = ""
        self._lock = threading.Lock()

    def hold(self, store: SecretStore, keys: RecordKeys) -> None:
        """The keys ``store``'s Secret held at the start (what its watch starts from)."""
        with self._lock:
            self.store, self.keys, self._shown = store, keys, False

    def watched(self, type_: str, obj: Mapping[str, Any]) -> None:
        """An event of the Secret's watch: it as it is now (deleted); put back at once by the leader."""
        data = None if type_ == "DELETED" else _data(obj)
        with self._lock:
            self._seen, self._shown = data, True
            self._version = "" if data is None else str(meta_of(obj).get("resourceVersion") or "")
        self.mend()

    def due(self) -> bool:
        """Whether the leader should :meth:`mend` now (owed, and not tried in the last :data:`MEND_AGAIN`)."""
        return self.owed and self.clock() >= self._next_try

    def mend(self) -> None:
        """The Secret as last shown judged against the keys held: taken (its keys adopted), or, by the
        leader, put back. A write that conflicts (another wrote meanwhile) reads it again and judges
        again; one that fails is tried again :data:`MEND_AGAIN` later."""
        told: tuple[str, str, str] | None = None
        with self._lock:
            for _ in range(3):
                held, store = self.keys, self.store
                if held is None or store is None or not self._shown:
                    return
                seen = self._seen
                keys = None if seen is None else usable(seen)
                if keys is not None and held.keys[0] in keys:
                    self.owed = False
                    if keys != held.keys:
                        self._take(RecordKeys(keys=keys, since=held.since))
                        log.info(
                            "bound-under records: Secret %s/%s holds %s; signing with its first from now on",
                            store.namespace, store.name, _count(len(keys)),
                        )  # fmt: skip
                    return
                self.owed = True
                if not self.leading() or self.clock() < self._next_try:
                    return
                try:
                    told = self._write(store, held=held, seen=seen, keys=keys)
                except Conflict:
                    found = None
                    with contextlib.suppress(Exception):
                        found = store.read()
                    self._seen, self._version = (None, "") if found is None else found
                    continue
                except Exception as exc:
                    self._next_try = self.clock() + MEND_AGAIN
                    said = error_summary(exc)
                    if said != self._said:
                        self._said = said
                        log.error(
                            "bound-under records: cannot put back the key Secret %s/%s (%s); asking again "
                            "every %gs; its Role needs create on Secrets and update on that one",
                            store.namespace, store.name, said, MEND_AGAIN,
                        )  # fmt: skip
                    return
                break
        if told is not None and self.tell is not None:
            self.tell(*told)

    def _write(
        self,
        store: SecretStore,
        *,
        held: RecordKeys,
        seen: dict[str, bytes] | None,
        keys: tuple[bytes, ...] | None,
    ) -> tuple[str, str, str]:
        """(Under the lock, leading.) The Secret written as :meth:`mend` found owed; the Event to tell."""
        notes = {SINCE: rfc3339(held.since)}
        where = f"Secret {store.namespace}/{store.name}"
        if seen is None or keys is None:
            kept = held.keys
            data = dict(zip((CURRENT, PREVIOUS), kept, strict=False))
            if seen is None:
                version = store.create(data, annotations=notes)
                why = "was deleted"
            else:
                version = store.replace(data, self._version, annotations=notes)
                why = "held no usable key"
            reason = RESTORED
            said = (
                f"{where}, the key the pods' bound-under records are signed with, {why}: put back with the "
                f"{_count(len(kept))} this scheduler holds (a new key would leave every running pod's record "
                "unverified, an orphan counted in its namespace's default queue)"
            )
        else:
            kept = (keys[0], held.keys[0])
            version = store.replace(
                dict(zip((CURRENT, PREVIOUS), kept, strict=True)), self._version, annotations=notes
            )
            reason = KEPT
            lost = len({*keys, *held.keys} - set(kept))
            dropped = f" ({_count(lost)} not kept: two are)" if lost else ""
            said = (
                f"{where}, the key the pods' bound-under records are signed with, was changed: its new key "
                f"signs from now on and the one this scheduler signed with is kept as {PREVIOUS!r}, so the "
                f"records signed with it still verify{dropped}"
            )
        self._seen, self._version = dict(zip((CURRENT, PREVIOUS), kept, strict=False)), version
        self.owed, self._said = False, ""
        self.mended += 1
        if kept != held.keys:
            self._take(RecordKeys(keys=kept, since=held.since))
        log.warning("bound-under records: %s", said)
        return reason, said, store.uid

    def _take(self, keys: RecordKeys) -> None:
        """(Under the lock.) ``keys`` held from now on, and adopted."""
        self.keys = keys
        self.adopt(keys)


def _count(keys: int) -> str:
    return "one key" if keys == 1 else f"{keys} keys"
