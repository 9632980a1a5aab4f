"""Workload traces (``volsched simulate --trace``): one record per job in CSV, JSON Lines or YAML, read
alike, checked against the JSON Schema and volsched's rules (a bad record: exit 2 with the file, line
and field), replayed as a PodGroup and its pods; the seeded generator; the bundled Kueue baseline."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import pytest
import yaml

from tests.builders import node, queue
from volsched.cli import main
from volsched.simulate import Document, Replay
from volsched.simulate.generate import WorkloadParams, generate
from volsched.simulate.scenarios import KUEUE_CLASSES, kueue_baseline
from volsched.simulate.trace import TraceJob, schema
from volsched.simulate.tracefiles import dump_csv, dump_jsonl, dump_yaml, load_trace

JSONL = """\
{"name": "train", "submit": 0, "queue": "a", "pods": 2, "minMember": 2, "requests": {"cpu": "2", "memory": "1Gi"}, "duration": "10m", "class": "big", "priority": 10}

{"submit": "1m", "queue": "b", "requests": {"cpu": 1}, "duration": 30, "nodeSelector": {"zone": "east"}, "onEviction": "RestartPod"}
"""
CSV = """\
name,submit,queue,pods,minMember,requests.cpu,requests.memory,duration,class,priority,nodeSelector.zone,onEviction
train,0,a,2,2,2,1Gi,10m,big,10,,
,1m,b,,,1,,30,,,east,RestartPod
"""
YAML = """\
- {name: train, submit: 0, queue: a, pods: 2, minMember: 2, requests: {cpu: "2", memory: 1Gi}, duration: 10m,
   class: big, priority: 10}
- submit: 1m
  queue: b
  requests: {cpu: 1}
  duration: 30
  nodeSelector: {zone: east}
  onEviction: RestartPod
"""


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("name", "text"), [("t.jsonl", JSONL), ("t.csv", CSV), ("t.yaml", YAML)])
def test_every_format_reads_the_same_jobs(tmp_path, name, text):
    jobs = load_trace(_write(tmp_path, name, text))
    got = [{**j.record(), "requests": {k: str(v) for k, v in j.requests.items()}} for j in jobs]
    assert got == [
        {
            "name": "train",
            "submit": 0,
            "queue": "a",
            "class": "big",
            "priority": 10,
            "pods": 2,
            "minMember": 2,
            "requests": {"cpu": "2", "memory": "1Gi"},
            "duration": 600,
        },
        {
            "name": "job-2",  # the record's number
            "submit": 60,
            "queue": "b",
            "pods": 1,
            "minMember": 1,
            "requests": {"cpu": "1"},
            "duration": 30,
            "nodeSelector": {"zone": "east"},
            "onEviction": "RestartPod",
        },
    ]


def test_the_writers_read_back_the_same_jobs(tmp_path):
    jobs = generate(WorkloadParams(jobs=40, seed=7, requests={"cpu": "2", "nvidia.com/gpu": "1"}))
    for name, text in (("a.jsonl", dump_jsonl(jobs)), ("a.csv", dump_csv(jobs)), ("a.yaml", dump_yaml(jobs))):
        back = load_trace(_write(tmp_path, name, text))
        assert [(j.name, j.submit, j.queue, j.pods, j.duration) for j in back] == [
            (j.name, j.submit, j.queue, j.pods, j.duration) for j in jobs
        ], name
        assert {str(v) for j in back for v in j.requests.values()} == {"2", "1"}


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert set(schema()["required"]) == {"submit", "queue", "requests", "duration"}


GOOD = '{"submit": 0, "queue": "a", "requests": {"cpu": "1"}, "duration": 60}'


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        pytest.param(
            "t.jsonl",
            GOOD + '\n{"submit": 0, "requests": {"cpu": "1"}, "duration": 1}\n',
            "line 2: queue: missing",
            id="missing-field",
        ),
        pytest.param(
            "t.jsonl",
            GOOD + "\n\n" + GOOD[:-1] + ', "gpus": 2}\n',
            "line 3: gpus: unknown field",
            id="unknown-field",
        ),
        pytest.param(
            "t.jsonl",
            GOOD.replace('"cpu": "1"', '"cpu": "lots"') + "\n",
            "line 1: requests.cpu: malformed quantity",
            id="bad-quantity",
        ),
        pytest.param(
            "t.jsonl",
            GOOD.replace("60", '"soon"') + "\n",
            "line 1: duration: expected seconds or a duration",
            id="bad-duration",
        ),
        pytest.param(
            "t.jsonl",
            GOOD.replace("60", "-5") + "\n",
            "line 1: duration: -5 is less than the minimum of 0",
            id="negative-duration",
        ),
        pytest.param(
            "t.jsonl",
            GOOD[:-1] + ', "pods": 2, "minMember": 3}\n',
            "line 1: minMember: 3 is more than its 2 pod(s)",
            id="min-member",
        ),
        pytest.param(
            "t.jsonl",
            GOOD[:-1] + ', "pods": 0}\n',
            "line 1: pods: 0 is less than the minimum of 1",
            id="no-pods",
        ),
        pytest.param(
            "t.jsonl",
            GOOD.replace('"submit": 0', '"submit": 1e12') + "\n",
            "line 1: submit: 1000000000000.0 is greater than the maximum of 3153600000",
            id="submit-past-a-century",
        ),
        pytest.param(
            "t.jsonl",
            GOOD.replace('"submit": 0', '"submit": "900000000h"') + "\n",
            "line 1: submit: '900000000h' is past 3153600000 seconds (100 years) from the replay's start",
            id="submit-past-a-century-as-a-duration",
        ),
        pytest.param("t.jsonl", GOOD + "\n{nope\n", "line 2: not JSON", id="not-json"),
        pytest.param(
            "t.jsonl",
            GOOD[:-1] + ', "name": "x"}\n' + GOOD[:-1] + ', "name": "x"}\n',
            "line 2: name: job default/x is already on line 1",
            id="duplicate",
        ),
        pytest.param(
            "t.jsonl",
            GOOD[:-1] + ', "onEviction": "Never"}\n',
            "line 1: onEviction: 'Never' is not one of",
            id="bad-enum",
        ),
        pytest.param(
            "t.csv",
            "submit,queue,requests.cpu,duration\n0,a,1,60\n0,a,1m,60\n1,a,1,60,9\n",
            "line 4: more cells than the header",
            id="csv-extra-cell",
        ),
        pytest.param(
            "t.csv",
            "submit,queue,requests.cpu,duration,pods\n0,a,1,60,two\n",
            "line 2: pods: 'two' is not of type 'integer'",
            id="csv-not-a-number",
        ),
        pytest.param(
            "t.yaml",
            "- "
            + GOOD
            + "\n-\n  submit: 1\n  queue: a\n  requests: {cpu: 1}\n  duration: 1\n  nodeSelector: {zone: [east]}\n",
            "line 3: nodeSelector.zone: ['east'] is not of type 'string'",
            id="yaml-line-of-the-record",
        ),
        pytest.param("t.txt", GOOD, "unknown trace format '.txt'", id="unknown-format"),
        # Each below was taken (the last cell of a column named twice kept), or ended in a traceback.
        pytest.param(
            "t.csv",
            "submit,queue,queue,requests.cpu,duration\n0,a,b,1,60\n",
            "line 1: column queue appears more than once in the header",
            id="csv-column-twice",
        ),
        pytest.param(
            "t.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "line 1: not JSON (nested", id="deep-json"
        ),
        pytest.param(
            "t.csv",
            "submit,queue,requests.cpu,duration,tolerations\n0,a,1,60," + "[" * 60_000 + "]" * 60_000 + "\n",
            "line 2: tolerations: not JSON (nested",
            id="csv-deep-json-cell",
        ),
        pytest.param(
            "t.csv",
            "submit,queue,requests.cpu,duration,name\n0,a,1,60," + "x" * 200_000 + "\n",
            "line 2: not CSV (field larger than field limit",
            id="csv-cell-past-the-field-limit",
        ),
        pytest.param(
            "t.jsonl",
            GOOD[:-1] + ', "tolerations": [{"key": "k", "operator": "Exists", "effect": "Bogus"}]}\n',
            "line 1: tolerations.0.effect: 'Bogus' is not one of",
            id="toleration-effect",
        ),
    ],
)
def test_a_bad_record_exits_2_naming_the_file_line_and_field(tmp_path, capsys, name, text, expected):
    path = _write(tmp_path, name, text)
    assert main(["trace", "check", path]) == 2
    err = capsys.readouterr().err
    assert path in err and expected in err, err


def test_a_job_submitted_past_a_century_is_refused_before_the_replay(tmp_path, capsys):
    """The defect: the replay made the job's objects with a creation time past the year 9999 and ended in
    a traceback (ValueError, OverflowError) instead of exiting 2 naming the line and the field."""
    cluster = _write(tmp_path, "c.yaml", yaml.safe_dump_all([node("n0", cpu="4"), queue("a")]))
    trace = _write(tmp_path, "t.jsonl", GOOD + "\n" + GOOD.replace('"submit": 0', '"submit": 1e308') + "\n")
    assert main(["simulate", "-f", cluster, "--trace", trace]) == 2
    assert f"{trace}: line 2: submit: 1e+308 is greater than the maximum" in capsys.readouterr().err


def test_a_job_in_a_queue_the_cluster_lacks_is_refused_before_the_replay(tmp_path, capsys):
    cluster = _write(tmp_path, "c.yaml", yaml.safe_dump_all([node("n0", cpu="4"), queue("a")]))
    trace = _write(tmp_path, "t.jsonl", GOOD + "\n" + GOOD.replace('"a"', '"zz"') + "\n")
    assert main(["simulate", "-f", cluster, "--trace", trace]) == 2
    err = capsys.readouterr().err
    assert f"{trace}: line 2: queue: queue 'zz' is not in the input" in err


def test_a_trace_replays_as_gangs_of_its_pods(tmp_path, capsys):
    # One node of 4 cpu: the 2-pod gang of 2 cpu each runs 0..600; the 1-cpu job of queue b, at 60,
    # waits for it (no room), then runs 600..630.
    cluster = _write(tmp_path, "c.yaml", yaml.safe_dump_all([node("n0", cpu="4"), queue("a"), queue("b")]))
    trace = _write(tmp_path, "t.jsonl", JSONL.replace(', "nodeSelector": {"zone": "east"}', ""))
    assert main(["simulate", "-f", cluster, "--trace", trace, "-o", "json"]) == 0
    pods = json.loads(capsys.readouterr().out)["replay"]["pods"]
    assert {k: (p["created"], p["started"], p["finished"]) for k, p in pods.items()} == {
        "default/train-0": (0, 0, 600),
        "default/train-1": (0, 0, 600),
        "default/job-2-0": (60, 600, 630),
    }
    assert pods["default/train-0"]["job"] == "default/train"


def test_the_generator_is_seeded():
    params = WorkloadParams(jobs=500, hours=24, queues={"a": 3, "b": 1}, seed=11)
    one, two = generate(params), generate(params)
    assert one == two
    assert generate(WorkloadParams(jobs=500, seed=12)) != one
    assert len(one) == 500 and all(0 <= j.submit < 24 * 3600 for j in one)
    assert [j.submit for j in one] == sorted(j.submit for j in one)
    queues = Counter(j.queue for j in one)
    assert 300 < queues["a"] < 450  # three quarters of 500, give or take
    sizes = Counter(j.pods for j in one)
    assert set(sizes) == {1, 4, 16} and sizes[1] > sizes[4] > sizes[16]
    assert all(j.min_member == j.pods and j.duration >= 10 for j in one)
    # The day's shape: more arrive in the busy afternoon hours than in the small hours.
    hour = Counter(int(j.submit // 3600) for j in one)
    assert sum(hour[h] for h in (14, 15, 16, 17)) > 2 * sum(hour[h] for h in (2, 3, 4, 5))


def test_generate_writes_a_trace_that_checks(tmp_path, capsys):
    assert main(["trace", "generate", "--jobs", "25", "--seed", "3", "--queues", "x=1,y=2"]) == 0
    path = _write(tmp_path, "g.jsonl", capsys.readouterr().out)
    assert main(["trace", "check", path]) == 0
    assert "25 job(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--queues", "a=nan"], "--queues: the weight of a must be a finite number > 0, got 'nan'"),
        (["--queues", "a=lots"], "--queues: the weight of a must be a finite number > 0, got 'lots'"),
        (["--sizes", "4=inf"], "--sizes: the probability of 4 must be a finite number > 0, got 'inf'"),
        (["--peak", "nan"], "--peak must be a finite number >= 1, got nan"),
        (["--sigma", "nan"], "--sigma must be a finite number from 0 to 10, got nan"),
        (["--sigma", "1e308"], "--sigma must be a finite number from 0 to 10, got 1e+308"),
        (["--hours", "1e308"], "--hours must be a number > 0 and at most 876000 (100 years), got 1e+308"),
        (["--jobs", "99999999999"], "--jobs must be from 0 to 1000000, got 99999999999"),
        (["--requests", "cpu=-1"], "--requests: requests.cpu: a quantity must be finite, from 0 to 2^63-1"),
        (["--requests", "cpu=abc"], "--requests: requests.cpu: malformed quantity"),
        (["--namespace", "Bad_NS"], "--namespace: 'Bad_NS' is not valid: a DNS label"),
        (["--seed", "-1"], "--seed must be a whole number >= 0, got -1"),
        (["--median", "1e308", "--sigma", "10"], "--median and --sigma make durations too long to write"),
    ],
)
def test_generate_refuses_what_would_make_no_trace(capsys, flags, message):
    """The defect: each of these ended in a traceback (numpy refusing NaN probabilities, a seed < 0, an
    array too large for memory...) or wrote a trace that does not check (a negative request, a namespace
    that is no DNS label, NaN arrival times), instead of exiting 2 naming the flag."""
    assert main(["trace", "generate", "--jobs", "5", *flags]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert message in err, err


def test_the_kueue_baseline_has_its_cohorts_queues_and_classes():
    scenario = kueue_baseline()
    kinds = Counter(d.obj["kind"] for d in scenario.documents)
    assert kinds["Queue"] == 5 + 30 and kinds["Node"] == 10
    assert len(scenario.trace) == 15_000
    per_class = Counter(j.job_class for j in scenario.trace)
    assert per_class == {c.name: 30 * c.count for c in KUEUE_CLASSES}
    large = sorted(j.submit for j in scenario.trace if j.queue == "cohort-0-cq-0" and j.job_class == "large")
    assert large[:3] == [0.0, 1.2, 2.4]
    leaf = next(d.obj for d in scenario.documents if d.obj["metadata"]["name"] == "cohort-2-cq-5")
    assert leaf["spec"] == {
        "parent": "cohort-2",
        "weight": 1,
        "guarantee": {"resource": {"cpu": "20"}},
        "capability": {"cpu": "120"},
    }


def test_the_kueue_baselines_first_workloads_replay():
    scenario = kueue_baseline()
    first: list[TraceJob] = [j for j in scenario.trace if j.submit < 0.5]
    result = Replay(scenario.documents, scenario.config, trace=first).run()
    assert result.jobs_finished == len(first)
    assert all(r.finished is not None for r in result.runs.values())
    assert isinstance(scenario.documents[0], Document)


def test_a_csv_saved_with_a_byte_order_mark_reads_as_without(tmp_path, capsys):
    """The defect: a spreadsheet's CSV (a UTF-8 byte-order mark before its header) was refused, its first
    column read as an unknown field named '\\ufeffsubmit'."""
    path = _write(tmp_path, "t.csv", "\ufeffsubmit,queue,requests.cpu,duration\n0,a,1,60\n")
    assert main(["trace", "check", path]) == 0, capsys.readouterr().err
