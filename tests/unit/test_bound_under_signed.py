"""The signed bound-under record (note16 Found 3, note17 Found 1): a record signed for one pod verifies
for it alone, with its key alone, unchanged; the writer signs each bind's record, the cache takes a
record only signed or, unsigned, on a pod made before the key (docs/tenancy.md "The signed record")."""

from __future__ import annotations

import base64
import hmac
import json
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from tests.unit._scripted_server import OK, ScriptedServer
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND
from volsched.framework.decisions import Bind
from volsched.kube import recordkey
from volsched.kube.port import rejection_events
from volsched.kube.secret import Conflict
from volsched.kube.writer import KubeWriter
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER
from volsched.model.vocabulary import SCHEDULER_NAME

KEY, OTHER = b"k" * 32, b"o" * 32
RECORD = admitted.bound_under(uid="pg-uid", queue="team-a", priority_class="low", priority=10, min_member=2)


@pytest.mark.parametrize("record", [RECORD, admitted.STANDING_ALONE], ids=["group", "standing-alone"])
def test_a_signed_record_verifies_for_its_pod_and_key_alone(record: str) -> None:
    signed = admitted.sign(record, uid="pod-uid", key=KEY)
    assert json.loads(signed)["sig"]  # (still one JSON object: read_bound reads it as before)
    assert admitted.verified(signed, uid="pod-uid", keys=[KEY]) == record
    assert admitted.verified(signed, uid="pod-uid", keys=[OTHER, KEY]) == record  # (a key rotated: both)
    assert admitted.verified(signed, uid="another-pod", keys=[KEY]) is None  # copied from another pod
    assert admitted.verified(signed, uid="pod-uid", keys=[OTHER]) is None
    assert admitted.verified(record, uid="pod-uid", keys=[KEY]) is None  # unsigned


def test_a_signed_record_changed_does_not_verify() -> None:
    signed = admitted.sign(RECORD, uid="pod-uid", key=KEY)
    assert admitted.read_bound(signed) == admitted.read_bound(RECORD)
    for forged in (
        signed.replace("team-a", "team-b"),
        signed.replace('"priority":10', '"priority":11'),
        signed + " ",
        signed.replace(',"sig"', ' ,"sig"'),
    ):
        assert admitted.verified(forged, uid="pod-uid", keys=[KEY]) is None, forged


def test_the_signature_is_hmac_sha256_over_the_uid_and_the_text_whatever_the_key_and_the_order_of_use() -> (
    None
):
    """The key's HMAC is kept and copied for each signature (admitted._keyed): each is still exactly
    ``hmac.digest``'s, for keys of every length (past SHA-256's block too, which HMAC hashes first), used
    in turn and again, and one key's use never feeds another's."""
    keys = [KEY, OTHER, b"x" * 64, b"y" * 65, bytes(range(200)), KEY]
    for round_ in range(3):
        for i, key in enumerate(keys):
            uid, text = f"pod-{round_}-{i}", admitted.sign(RECORD, uid="u", key=key)
            want = hmac.digest(key, b"%s\n%s" % (uid.encode(), text.encode()), "sha256")
            signed = admitted.sign(text, uid=uid, key=key)
            assert json.loads(signed)["sig"] == base64.b64encode(want).decode("ascii")
            assert admitted.verified(signed, uid=uid, keys=[OTHER, key]) == text


# --- wired in (note17 Found 1): the writer signs, the cache checks, records from before the key ----------

KEYS = admitted.RecordKeys(
    keys=(KEY,), since=1_767_225_660.0
)  # the key's Secret made at 2026-01-01T00:01:00Z
BEFORE, AFTER = "2026-01-01T00:00:30Z", "2026-01-01T00:02:00Z"


def test_checked_takes_a_signed_record_and_an_unsigned_one_only_on_a_pod_made_before_the_key() -> None:
    signed = admitted.sign(RECORD, uid="u", key=KEY)
    for created in (KEYS.since - 30, KEYS.since + 60, 0.0):
        assert admitted.checked(signed, uid="u", created=created, keys=KEYS) == RECORD
        assert admitted.checked(signed, uid="other", created=created, keys=KEYS) is None
    assert admitted.checked(RECORD, uid="u", created=KEYS.since - 1, keys=KEYS) == RECORD  # (an upgrade)
    assert admitted.checked(RECORD, uid="u", created=KEYS.since, keys=KEYS) is None  # (the same second)
    assert admitted.checked(RECORD, uid="u", created=KEYS.since + 60, keys=KEYS) is None
    assert admitted.checked(RECORD, uid="u", created=0.0, keys=KEYS) is None  # (a time not known)
    forged = admitted.sign(RECORD, uid="u", key=OTHER)  # signed, by another key: not taken, however old
    assert admitted.checked(forged, uid="u", created=KEYS.since - 30, keys=KEYS) is None


def _x_on_a_node(record: str | None, *, made: str = AFTER, uid: str = "uid-x") -> dict[str, Any]:
    """Pod x standing alone, made (``made``) with spec.nodeName n1 and ``record`` on it."""
    notes = {BOUND_UNDER: record} if record is not None else None
    obj = pod("x", ns="ns", cpu="1", node="n1", created=made, annotations=notes)
    obj["metadata"]["uid"] = uid
    return obj


def _with_podgroup_x(x: dict[str, Any], *, keys: admitted.RecordKeys | None = KEYS) -> ClusterState:
    """PodGroup x (minMember 2, made before the key and pod x) and its pod x-0 waiting; then pod x."""
    state = ClusterState()
    state.record_keys = keys
    for obj in (
        node("n1", cpu="4"),
        queue("q"),
        podgroup("x", ns="ns", queue="q", min_member=2, created="2026-01-01T00:00:01Z"),
        pod("x-0", ns="ns", cpu="1", group="x", created="2026-01-01T00:00:02Z"),
        x,
    ):
        state.apply(obj)
    return state


def _member(state: ClusterState) -> bool:
    snap = state.snapshot(now=1.0)
    return snap.jobs["ns/x"].podgroup is not None and "ns/x" in snap.jobs["ns/x"].tasks


def test_a_pod_made_on_a_node_with_a_forged_standing_alone_record_keeps_no_podgroups_name() -> None:
    """The second form of the hole (b066145): one pods/create with spec.nodeName and the record of a bind
    standing alone took an older PodGroup's name (its pods waiting, told PodGroupNameTaken). Unsigned on
    a pod made after the key, the record is not taken: pod x is PodGroup x's member, and told why."""
    state = _with_podgroup_x(_x_on_a_node(admitted.STANDING_ALONE))
    assert _member(state)  # before (no key): x keeps the name, PodGroup x no job
    assert state.tasks["ns/x"].record_unverified
    assert state.not_verified["ns/x"].startswith(
        f"the record of this pod's bind (annotation {BOUND_UNDER}) is not taken: it is not signed"
    )
    assert not _member(_with_podgroup_x(_x_on_a_node(admitted.STANDING_ALONE), keys=None))  # (the control)


@pytest.mark.parametrize("how", ["signed", "unsigned, made before the key"])
def test_a_record_signed_or_older_than_the_key_keeps_its_name(how: str) -> None:
    if how == "signed":
        x = _x_on_a_node(admitted.sign(admitted.STANDING_ALONE, uid="uid-x", key=KEY))
    else:
        x = _x_on_a_node(admitted.STANDING_ALONE, made=BEFORE)
    state = _with_podgroup_x(x)
    assert not _member(state) and state.not_verified == {}
    assert state.tasks["ns/x"].annotations[BOUND_UNDER] == admitted.STANDING_ALONE  # (without its signature)


def test_a_record_signed_for_another_pod_is_not_taken() -> None:
    state = _with_podgroup_x(_x_on_a_node(admitted.sign(admitted.STANDING_ALONE, uid="uid-y", key=KEY)))
    assert _member(state) and "ns/x" in state.not_verified


def test_an_orphan_whose_record_is_not_verified_counts_in_its_namespaces_default_queue_at_its_own_priority() -> (
    None
):
    """Where the queue's rules would take the record (its queue exists and takes the namespace), a record
    that is not verified is still not taken: the orphan counts as one whose record is refused does."""
    record = admitted.bound_under(uid="g-uid", queue="qb", priority_class="", priority=0, min_member=1)
    state = ClusterState()
    state.record_keys = KEYS
    for obj in (node("n1", cpu="4"), queue("qb")):
        state.apply(obj)
    orphan = pod(
        "g-0", ns="ns", cpu="1", group="g", node="n1", created=AFTER, annotations={BOUND_UNDER: record}
    )
    state.apply(orphan)
    snap = state.snapshot(now=1.0)
    assert snap.jobs["ns/g-0"].queue == "default"  # before: qb, the record's
    told = {obj: message for obj, _, message in snap.problems}
    assert admitted.NOT_VERIFIED_WHY in told["Pod ns/g-0"]
    signed = {**orphan, "metadata": {**orphan["metadata"], "uid": "uid-g-1", "resourceVersion": "9"}}
    signed["metadata"]["annotations"] = {
        **orphan["metadata"]["annotations"],
        BOUND_UNDER: admitted.sign(record, uid="uid-g-1", key=KEY),
    }
    state.apply(signed)  # (the same pod made again, its record signed: taken)
    assert state.snapshot(now=2.0).jobs["ns/g-0"].queue == "qb"


def test_the_echo_of_an_assumed_bind_with_its_signed_record_is_taken_and_the_record_laid_over_not_checked() -> (
    None
):
    """note17 Found 2's record, laid over the assumed bind unsigned (the cache's own), is not checked;
    the echo brings the record signed, which verifies: its text without the signature is the one laid."""
    feeder = Feeder(ClusterState(), assume_ttl=30)
    feeder.state.record_keys = KEYS
    for obj in (node("n1", cpu="4"), queue("q")):
        feeder.apply(str(obj["kind"]), obj)
    x = pod("x", ns="ns", cpu="1", created=AFTER)
    x["metadata"].update(uid="uid-x", resourceVersion="10")
    feeder.apply("Pod", x)
    assert feeder.assume("ns/x", "uid-x", "n1", record=admitted.STANDING_ALONE)
    meanwhile = {**x, "metadata": {**x["metadata"], "resourceVersion": "11", "labels": {"a": "b"}}}
    feeder.apply("Pod", meanwhile)  # (an event from before the bind: the record laid over again)
    task = feeder.state.tasks["ns/x"]
    assert task.annotations[BOUND_UNDER] == admitted.STANDING_ALONE and not task.record_unverified
    echo = {**meanwhile, "spec": {**meanwhile["spec"], "nodeName": "n1"}}
    echo["metadata"] = {
        **meanwhile["metadata"],
        "resourceVersion": "12",
        "annotations": {BOUND_UNDER: admitted.sign(admitted.STANDING_ALONE, uid="uid-x", key=KEY)},
    }
    feeder.apply("Pod", echo)
    task = feeder.state.tasks["ns/x"]
    assert task.annotations[BOUND_UNDER] == admitted.STANDING_ALONE and not task.record_unverified
    assert feeder.state.not_verified == {}


def test_a_pod_whose_record_is_not_verified_is_told_once_by_an_event() -> None:
    state = _with_podgroup_x(_x_on_a_node(admitted.STANDING_ALONE))
    feeder = Feeder(state)
    [(target, event)] = rejection_events(feeder)
    assert (target.kind, target.name, target.uid, event.reason) == (
        "Pod",
        "x",
        "uid-x",
        "BoundUnderNotVerified",
    )
    state.delete("Pod", "ns", "x")
    assert rejection_events(feeder) == []


def test_the_writer_signs_the_record_of_a_bind_for_its_pod(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    server.script["/binding"] = [OK]
    writer.record_key = KEY
    bind = Bind(pod="ns/x", uid="uid-x", node="n1", bound_under=admitted.STANDING_ALONE)
    ours = {
        "metadata": {"name": "x", "namespace": "ns", "uid": "uid-x"},
        "spec": {"schedulerName": SCHEDULER_NAME},
    }
    assert writer.bind(bind, ours).result == BOUND
    [sent] = server.sent("/binding")
    text = sent.body["metadata"]["annotations"][BOUND_UNDER]
    assert admitted.verified(text, uid="uid-x", keys=[KEY]) == admitted.STANDING_ALONE


class _Store:
    """A SecretStore's part ``recordkey.load`` uses: one Secret, perhaps made by another meanwhile."""

    namespace, name = "volsched-system", recordkey.SECRET

    def __init__(self, data: dict[str, bytes] | None, *, raced: dict[str, bytes] | None = None) -> None:
        self.data, self.raced, self.created, self.made = data, raced, 0.0, 0
        self.annotations: dict[str, str] = {}

    def read(self) -> tuple[dict[str, bytes], str] | None:
        if self.data is None:
            return None
        self.created = KEYS.since
        return self.data, "1"

    def create(self, data: dict[str, bytes]) -> str:
        if self.raced is not None:
            self.data = self.raced
            raise Conflict("made by another replica")
        self.made += 1
        self.data = dict(data)
        return "1"


def test_the_key_is_made_once_read_after_a_race_and_refused_when_too_short() -> None:
    made = _Store(None)
    keys = recordkey.load(made)  # type: ignore[arg-type]
    assert made.made == 1 and len(keys.keys[0]) == 32 and keys.since == KEYS.since
    assert recordkey.load(made) == keys and made.made == 1  # (read again, not made again)
    raced = _Store(None, raced={"key": KEY, "previous": OTHER})
    assert recordkey.load(raced).keys == (KEY, OTHER)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no key of at least 32 bytes"):
        recordkey.load(_Store({"key": b"short"}))  # type: ignore[arg-type]


def test_a_key_secret_refused_or_unusable_ends_the_start_in_a_line_and_an_outage_does_not() -> None:
    from volsched.kube.errors import ApiException
    from volsched.model.errors import InputError
    from volsched.operator import _record_keys_refused

    def answer(status: int, message: str) -> ApiException:
        return ApiException(status=status, reason="Forbidden", body=json.dumps({"message": message}))

    said = _record_keys_refused(
        namespace="ns", name="k", exc=answer(403, 'secrets "k" is forbidden: User "u" cannot get')
    )
    assert isinstance(said, InputError)
    assert str(said).startswith("the records' key, Secret ns/k, could not be read or made (refused, 403: ")
    assert 'User "u" cannot get' in str(said) and "needs get on that Secret" in str(said)
    unusable = _record_keys_refused(
        namespace="ns", name="k", exc=ValueError("Secret ns/k holds no key of at least 32 bytes")
    )
    assert isinstance(unusable, InputError) and "is not usable (Secret ns/k holds no key" in str(unusable)
    assert (
        _record_keys_refused(namespace="ns", name="k", exc=answer(500, "etcd")) is None
    )  # (asked again, not here)
    assert _record_keys_refused(namespace="ns", name="k", exc=OSError("refused")) is None
