"""`volsched simulate` on hostile files: each ends at once with exit status 2 and a message naming the
file, the document and the field (never a traceback, a hang or NaN shares)."""

from __future__ import annotations

import re

import pytest

from volsched.cli import main

NODE = 'kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}\n'


def _pod(
    *, name: str = "p", labels: str = "{}", cpu: str = '"1"', memory: str = "1Gi", extra: str = ""
) -> str:
    return (
        f"---\nkind: Pod\nmetadata: {{name: {name}, labels: {labels}}}\n"
        f"spec:\n  schedulerName: volsched\n{extra}"
        f"  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}}}]\n"
    )


def _bomb(levels: int) -> str:
    lines = ["---\nbomb:", '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]")
    return "\n".join(lines) + "\n"


def _job(parallelism: str) -> str:
    return (
        f"---\nkind: Job\napiVersion: batch/v1\nmetadata: {{name: j}}\nspec:\n  parallelism: {parallelism}\n"
        "  template:\n    spec:\n      schedulerName: volsched\n"
        '      containers: [{name: c, resources: {requests: {cpu: "1"}}}]\n'
    )


HOSTILE: list[tuple[str, str | bytes, str]] = [
    (
        "not-utf8",
        NODE.encode() + b"---\nkind: Pod\nmetadata: {name: caf\xe9}\n",
        r"document 2: not UTF-8: byte 0xe9 at line 6",
    ),
    (
        "latin1-label",
        NODE.encode() + _pod(labels="{team: \xe9quipe}").encode("latin-1"),
        r"document 2: not UTF-8",
    ),
    (
        "deep-flow",
        NODE + _pod(labels="{a: " + "[" * 50_000 + "]" * 50_000 + "}"),
        r"document 2: not valid YAML at line \d+, column \d+: nested deeper than 100",
    ),
    (
        "deep-block",
        NODE + "---\nkind: Pod\nmetadata:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(150)),
        r"document 2: .*nested deeper than 100",
    ),
    (
        "alias-bomb-in-labels",
        NODE
        + _bomb(9).replace("---\nbomb:", "---\nkind: Pod\nmetadata:\n  name: p\n  labels:")
        + "  spec: {}\n",
        r"document 2: not valid YAML at line \d+, column \d+: aliases expand to more than",
    ),
    (
        "small-bomb-as-a-label-value",
        NODE
        + "---\nx: &x [a, b, c, d, e, f, g, h, i, j]\ny: &y [*x, *x, *x, *x, *x, *x, *x, *x, *x, *x]\n"
        + _pod(labels="{a: *y}")[4:],
        r"document 2: Pod default/p: metadata.labels\[a\]: a list is not valid: a label value must be a string",
    ),
    (
        "recursive-alias",
        NODE + "---\nkind: Pod\nmetadata: &m {name: p, labels: {self: *m}}\n",
        r"document 2: .*alias \*m refers to a node that contains it",
    ),
    (
        "job-parallelism-1e8",
        NODE + _job("100000000"),
        r"document 2: Job default/j: spec.parallelism \(the simulator plays at most 10000 pods per Job\): expected an integer from 0 to 10000, got 100000000",
    ),
    (
        "jobs-past-50000-pods",
        NODE + "".join(_job("10000").replace("name: j}", f"name: j{i}}}") for i in range(6)),
        r"document 7: Job default/j5: spec.parallelism 10000 takes the Jobs' pods past 50000",
    ),
    (
        "creation-timestamp-nan",
        NODE + _pod().replace("name: p,", "name: p, creationTimestamp: .nan,"),
        r"document 2: Pod default/p: metadata.creationTimestamp: expected an RFC 3339 time, got nan",
    ),
    (
        "creation-timestamp-inf",
        NODE + _pod().replace("name: p,", "name: p, creationTimestamp: 1.0e+400,"),
        r"document 2: Pod default/p: metadata.creationTimestamp: expected an RFC 3339 time, got inf",
    ),
    (
        "job-parallelism-float",
        NODE + _job("1.0e+8"),
        r"document 2: Job default/j: spec.parallelism .*expected an integer from 0 to 10000, got 100000000.0",
    ),
    (
        "cpu-nan",
        NODE + _pod(cpu=".nan"),
        r"document 2: Pod default/p: spec.containers\[0\].resources.requests.cpu: a quantity must be finite, from 0 to 2\^63-1, got nan",
    ),
    (
        "cpu-NaN-string",
        NODE + _pod(cpu='"NaN"'),
        r"document 2: Pod default/p: spec.containers\[0\].resources.requests.cpu: malformed quantity 'NaN'",
    ),
    (
        "memory-1e400",
        NODE + _pod(memory='"1e400"'),
        r"document 2: Pod default/p: spec.containers\[0\].resources.requests.memory: a quantity must be finite.*'1e400'",
    ),
    (
        "memory-inf",
        NODE + _pod(memory=".inf"),
        r"document 2: Pod default/p: spec.containers\[0\].resources.requests.memory: a quantity must be finite.*got inf",
    ),
    (
        "node-allocatable-inf",
        NODE.replace('cpu: "8"', "cpu: .inf"),
        r"document 1: Node n1: status.allocatable.cpu: a quantity must be finite",
    ),
    (
        "podgroup-min-resources-1e400",
        NODE + '---\nkind: PodGroup\nmetadata: {name: g}\nspec: {minResources: {cpu: "1e400"}}\n',
        r"document 2: PodGroup default/g: spec.minResources.cpu: a quantity must be finite",
    ),
    (
        "label-value-64-chars",
        NODE + _pod(labels="{app: " + "a" * 64 + "}"),
        r"document 2: Pod default/p: metadata.labels\[app\]: 'a{64}' is not valid: a label value: at most 63",
    ),
    (
        "label-value-bad-characters",
        NODE + _pod(labels="{app: 'web server'}"),
        r"document 2: Pod default/p: metadata.labels\[app\]: 'web server' is not valid",
    ),
    (
        "label-value-not-a-string",
        NODE + _pod(labels="{replicas: 3}"),
        r"document 2: Pod default/p: metadata.labels\[replicas\]: 3 is not valid: a label value must be a string",
    ),
    (
        "label-key-bad-name",
        NODE + _pod(labels="{-app: web}"),
        r"document 2: Pod default/p: metadata.labels key: '-app' is not valid: a qualified name",
    ),
    (
        "label-key-bad-prefix",
        NODE + _pod(labels="{Example.COM/app: web}"),
        r"document 2: Pod default/p: metadata.labels key: 'Example.COM/app' is not valid: the prefix",
    ),
    (
        "label-key-too-long",
        NODE + _pod(labels="{" + "k" * 64 + ": v}"),
        r"document 2: Pod default/p: metadata.labels key: 'k{64}' is not valid",
    ),
    (
        "pod-name-not-dns",
        NODE + _pod(name="My_Pod"),
        r"document 2: Pod default/My_Pod: metadata.name: 'My_Pod' is not valid: a DNS subdomain",
    ),
    (
        "node-name-too-long",
        NODE.replace("name: n1", "name: " + "n" * 254),
        r"document 1: Node n{254}: metadata.name: 'n+\.\.\. is not valid: a DNS subdomain",
    ),
    (
        "namespace-not-dns-label",
        NODE + _pod().replace("name: p,", "name: p, namespace: team.a,"),
        r"document 2: Pod team.a/p: metadata.namespace: 'team.a' is not valid: a DNS label",
    ),
    (
        "priority-beyond-int32",
        NODE + _pod(extra="  priority: 4294967296\n"),
        r"document 2: Pod default/p: spec.priority must be a 32-bit integer, got 4294967296",
    ),
    (
        "min-member-huge",
        NODE + "---\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: " + "9" * 40 + "}\n",
        r"document 2: PodGroup default/g: spec.minMember must be at most 2147483647, got an integer of 40 digits",
    ),
    (
        # The defect: digits in a string were read as the number; the apiserver refuses them (an int32).
        "min-member-a-string",
        NODE + "---\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: '2'}\n",
        r"document 2: PodGroup default/g: spec.minMember: expected an integer >= 1, got '2' \(a string: the "
        r"apiserver refuses it; write the number without quotes: 2\)",
    ),
    (
        "queue-weight-a-string",
        NODE + "---\nkind: Queue\nmetadata: {name: q}\nspec: {weight: '3'}\n",
        r"document 2: Queue q: spec.weight: expected an integer >= 1, got '3' \(a string",
    ),
    # Tolerations the apiserver refuses, which were read as none (a string) or as Equal (Bogus).
    (
        "toleration-a-string",
        NODE + _pod(extra="  tolerations: [gpu]\n"),
        r"document 2: Pod default/p: spec\.tolerations\[0\] must be a map, got 'gpu'",
    ),
    (
        "toleration-operator-unknown",
        NODE + _pod(extra="  tolerations: [{key: gpu, operator: Bogus, value: x}]\n"),
        r"spec\.tolerations\[0\]\.operator: 'Bogus' is not one of Equal, Exists, Lt, Gt",
    ),
    (
        "toleration-effect-unknown",
        NODE + _pod(extra="  tolerations: [{key: gpu, operator: Exists, effect: Sometimes}]\n"),
        r"spec\.tolerations\[0\]\.effect: 'Sometimes' is not one of NoSchedule, PreferNoSchedule, NoExecute",
    ),
    (
        "toleration-exists-with-a-value",
        NODE + _pod(extra="  tolerations: [{key: gpu, operator: Exists, value: x}]\n"),
        r"spec\.tolerations\[0\]\.value: must be empty when operator is Exists",
    ),
    (
        "toleration-no-key-not-exists",
        NODE + _pod(extra="  tolerations: [{operator: Equal, value: x}]\n"),
        r"spec\.tolerations\[0\]\.operator: must be Exists when key is empty",
    ),
    (
        "toleration-gt-not-an-integer",
        NODE + _pod(extra="  tolerations: [{key: sla, operator: Gt, value: high}]\n"),
        r"spec\.tolerations\[0\]\.value: must be an integer for operator Gt, got 'high'",
    ),
    (
        "host-network-a-string",
        NODE + _pod(extra='  hostNetwork: "yes"\n'),
        r"document 2: Pod default/p: spec\.hostNetwork: expected true or false, got 'yes'",
    ),
    (
        "priority-class-name-a-number",
        NODE + _pod(extra="  priorityClassName: 5\n"),
        r"document 2: Pod default/p: spec\.priorityClassName must be a string, got 5",
    ),
    (
        "kind-a-list",
        NODE + _pod().replace("kind: Pod", "kind: [Pod]"),
        r"document 2: line 5: kind: must be a non-empty string, got \['Pod'\]",
    ),
    (
        "kind-a-number",
        NODE + _pod().replace("kind: Pod", "kind: 3"),
        r"document 2: line 5: kind: must be a non-empty string, got 3",
    ),
    (
        "kind-missing",
        NODE + _pod().replace("kind: Pod\n", ""),
        r"document 2: missing field kind",
    ),
    (
        "api-version-a-map",
        NODE + _pod().replace("kind: Pod", "kind: Pod\napiVersion: {v: 1}"),
        r"document 2: line 6: apiVersion: must be a non-empty string, got \{'v': 1\}",
    ),
    (
        "item-kind-a-list",
        NODE
        + "---\nkind: List\napiVersion: v1\nitems:\n- {kind: Node, metadata: {name: n2}}\n- kind: [Node]\n",
        r"document 2: line 9: items\[1\]\.kind: must be a non-empty string, got \['Node'\]",
    ),
    (
        "list-kind-a-map",
        NODE + "---\nkind: {List: 1}\nitems: []\n",
        r"document 2: line 5: kind: must be a non-empty string, got \{'List': 1\}",
    ),
    (
        "pod-status-a-string",
        NODE + _pod() + "status: Running\n",
        r"document 2: Pod default/p: status must be a map, got str",
    ),
    (
        "pod-node-name-a-number",
        NODE + _pod(extra="  nodeName: 5\n"),
        r"document 2: Pod default/p: spec.nodeName must be a string, got 5",
    ),
    (
        "quota-spec-a-string",
        NODE + "---\nkind: ResourceQuota\nmetadata: {name: weight}\nspec: hard\n",
        r"document 2: ResourceQuota default/weight: spec must be a map, got str",
    ),
    (
        "device-class-cel-a-string",
        NODE
        + "---\nkind: DeviceClass\napiVersion: resource.k8s.io/v1\nmetadata: {name: gpu}\n"
        + "spec: {selectors: [{cel: 'device.driver == \"x\"'}]}\n",
        r"document 2: DeviceClass gpu: spec.selectors\[0\]: missing field cel.expression",
    ),
    (
        # The defect: ours was checked, Volcano's (read the same way) was not: the pod loaded and waited.
        "volcano-queue-annotation-names-no-queue",
        NODE
        + _pod().replace("labels: {}}", "labels: {}, annotations: {scheduling.volcano.sh/queue-name: nope}}"),
        r"document 2: Pod default/p: annotation scheduling.volcano.sh/queue-name names queue 'nope', which is "
        r"not in the input",
    ),
    # A typo in a field of volsched's own Queue or PodGroup (the apiserver prunes what its CRD does not
    # name, and kubectl refuses it): the run ignored it, a gang of 3 placed one pod alone.
    (
        "queue-field-typo",
        NODE + "---\napiVersion: scheduling.volsched.io/v1beta1\nkind: Queue\nmetadata: {name: a}\n"
        "spec: {weigth: 3}\n",
        r"document 2: Queue a: spec\.weigth is not a field of volsched's Queue \(did you mean weight\?\); "
        r"known: weight, parent",
    ),
    (
        "podgroup-field-typo",
        NODE + "---\napiVersion: scheduling.volsched.io/v1beta1\nkind: PodGroup\n"
        "metadata: {name: g, namespace: default}\nspec: {minMembers: 3}\n",
        r"document 2: PodGroup default/g: spec\.minMembers is not a field of volsched's PodGroup \(did you "
        r"mean minMember\?\)",
    ),
    (
        "integer-of-5000-digits",
        NODE + _pod(extra="  priority: " + "9" * 5000 + "\n"),
        r"document 2: cannot load: Exceeds the limit",
    ),
]


@pytest.mark.parametrize(
    ("content", "message"), [(c, m) for _, c, m in HOSTILE], ids=[i for i, _, _ in HOSTILE]
)
def test_a_hostile_file_exits_2_naming_the_file_document_and_field(tmp_path, capsys, content, message):
    path = tmp_path / "hostile.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    assert main(["simulate", "-f", str(path), "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith(f"volsched simulate: {path}: document "), err
    assert re.search(message, err), err


def test_labels_names_and_counts_kubernetes_accepts_still_load(tmp_path, capsys):
    text = (
        NODE.replace("name: n1}", "name: node-1.example.com, labels: {topology.kubernetes.io/zone: eu-1a}}")
        + _pod(name="web-0.a", labels="{app.kubernetes.io/name: web, empty: '', v: " + "a" * 63 + "}")
        + _pod(name="q", extra="  priority: 2147483647\n").replace("name: q,", "name: q, namespace: team-a,")
        + _job("10000").replace("parallelism: 10000", "parallelism: 3")
    )
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    assert main(["simulate", "-f", str(path), "-o", "json"]) == 0
    assert '"default/j-2"' in capsys.readouterr().out


@pytest.mark.parametrize("obj", [{"kind": ["Pod"]}, {"kind": "Pod", "apiVersion": 1}, {"metadata": {}}])
def test_objects_handed_to_the_simulator_need_a_string_kind_too(obj):
    from volsched.model.errors import InputError
    from volsched.simulate import Document, Simulator

    with pytest.raises(InputError, match=r"^api: document 1: (kind|apiVersion): must be a string"):
        Simulator([Document("api: document 1", obj)])
