"""``volsched run``'s in-flight settings: binds and the writer's other requests apart, and the client's
connection pool sized for both."""

from __future__ import annotations

import logging

import pytest

from volsched.operator.settings import (
    build_parser,
    parse_log_levels,
    parse_scheduler_names,
    settings_from_args,
)


@pytest.mark.parametrize(
    ("argv", "bind_workers", "workers", "pool"),
    [
        ([], 128, 32, 164),  # the defaults: 128 binds in flight, 32 other writes, 4 for the reads
        (["--bind-workers", "32"], 32, 32, 68),  # the old default's connections
        (["--bind-workers", "1", "--workers", "1"], 1, 1, 6),
        (["--bind-workers", "0", "--workers", "0"], 0, 0, 6),  # at least one of each runs anyway
    ],
    ids=["defaults", "fewer-binds", "one-each", "zero"],
)
def test_bind_workers_and_writer_workers_are_set_apart_and_size_the_pool(
    argv: list[str], bind_workers: int, workers: int, pool: int
) -> None:
    s = settings_from_args(build_parser().parse_args(argv)).writer
    assert (s.bind_workers, s.workers, s.pool_size()) == (bind_workers, workers, pool)


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("INFO", {"": logging.INFO}),
        ("debug", {"": logging.DEBUG}),
        ("WARNING,volsched.latency=DEBUG", {"": logging.WARNING, "volsched.latency": logging.DEBUG}),
        ("volsched.latency=DEBUG", {"": logging.INFO, "volsched.latency": logging.DEBUG}),
        ("warn, volsched.latency=debug,", {"": logging.WARNING, "volsched.latency": logging.DEBUG}),
    ],
)
def test_log_level_sets_the_root_then_named_loggers(text: str, levels: dict[str, int]) -> None:
    assert parse_log_levels(text) == levels


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("LOUD", "unknown level 'LOUD'"),
        ("INFO,volsched.latency=NOISY", "unknown level 'NOISY' for logger 'volsched.latency'"),
        ("INFO,volsched.latency", "unknown level 'volsched.latency'"),  # the '=' left out
        ("volsched.latency=", "unknown level '' for logger 'volsched.latency'"),
        ("10", "unknown level '10'"),
    ],
)
def test_a_log_level_logging_does_not_know_is_refused_at_parse_naming_it(
    text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: such a name was ignored (the root at INFO, a named logger left as it was), so a
    misspelt DEBUG ran the operator without the lines asked for and nothing said why."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--log-level", text])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert f"error: argument --log-level: {message}: a level is one of CRITICAL," in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bind-backlog", "-1"], "argument --bind-backlog: must be an integer >= 0, got -1"),
        (["--bind-workers-first", "-3"], "argument --bind-workers-first: must be an integer >= 0, got -3"),
        (["--bind-workers", "-1"], "argument --bind-workers: must be an integer >= 0, got -1"),
        (["--workers", "1.5"], "argument --workers: must be an integer >= 0, got '1.5'"),
        (["--burst", "-2"], "argument --burst: must be an integer >= 0, got -2"),
        (
            ["--metrics-port", "65536"],
            "argument --metrics-port: must be an integer from 0 to 65535, got 65536",
        ),
        (["--webhook-port", "-1"], "argument --webhook-port: must be an integer from 0 to 65535, got -1"),
        (["--period", "0"], "argument --period: must be a number > 0, got 0"),
        (["--period", "nan"], "argument --period: must be a number > 0, got nan"),
        (["--min-gap", "-0.1"], "argument --min-gap: must be a number >= 0, got -0.1"),
        (["--max-idle", "inf"], "argument --max-idle: must be a number >= 0, got inf"),
        (["--volcano-check-every", "0"], "argument --volcano-check-every: must be a number > 0, got 0"),
        (["--lease-duration", "-15"], "argument --lease-duration: must be a number > 0, got -15"),
        (["--volume-bind-timeout", "0"], "argument --volume-bind-timeout: must be a number > 0, got 0"),
        (["--qps", "ten"], "argument --qps: must be a number >= 0, got 'ten'"),
        (
            ["--thread-slice", "0.05"],
            "argument --thread-slice: must be 0 or from 0.1 to 100 (milliseconds), got 0.05",
        ),
        (
            ["--thread-slice", "101"],
            "argument --thread-slice: must be 0 or from 0.1 to 100 (milliseconds), got 101",
        ),
        (["--thread-slice", "-1"], "argument --thread-slice: must be a number >= 0, got -1"),
    ],
)
def test_nonsense_numbers_are_refused_at_parse_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A negative backlog would start every bind worker at once, a negative gap or period spin: each is
    refused before anything starts, with exit 2 and the flag named."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")


@pytest.mark.parametrize(
    ("flag", "value", "rule"),
    [
        ("--namespace", "Volsched_System", "a DNS label"),
        ("--namespace", "", "a DNS label"),
        ("--config-map", "scheduler config", "a DNS subdomain"),
        ("--lease-name", "Volsched", "a DNS subdomain"),
        ("--webhook-cert-secret", "ns/certs", "a DNS subdomain"),
    ],
)
def test_a_name_the_apiserver_would_refuse_is_refused_at_parse(
    flag: str, value: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: such a name was taken, and every request naming it failed or found nothing while the
    operator ran on (a ConfigMap or Lease by a name no object can have: the built-in config in force, no
    replica ever the leader), with nothing refused at start."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert f"error: argument {flag}: {value!r} is not valid: {rule}" in err, err


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["--webhook-port", "8080"], True),  # the HTTP server's default port, the webhooks' default address
        (["--webhook-port", "9000", "--metrics-port", "9000", "--webhook-host", "0.0.0.0"], True),
        (["--webhook-port", "9000", "--metrics-port", "9000", "--metrics-host", "10.0.0.5,127.0.0.1"], True),
        (["--webhook-port", "9000", "--metrics-port", "9000", "--metrics-host", "10.0.0.5"], False),
        (["--webhook-port", "9443"], False),
        (["--metrics-port", "0"], False),  # no webhooks, any free port
    ],
)
def test_the_webhooks_and_the_http_server_on_one_port_of_one_address_are_refused(
    argv: list[str], refused: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: both were taken, and the webhooks' server failed to listen once the operator ran (the
    apiserver then refused every PodGroup and Queue, with the failure policy Fail)."""
    if not refused:
        build_parser().parse_args(argv)
        return
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert "is --metrics-port's too, on the same address" in capsys.readouterr().err


@pytest.mark.parametrize("names", ["volsched,Volsched_Scheduler", "my scheduler", "x" * 254])
@pytest.mark.parametrize("where", ["flag", "environment"])
def test_a_scheduler_name_no_pod_can_give_is_refused_at_parse(
    names: str, where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: it was taken (from the chart's schedulerNames too, through the environment), and the
    operator scheduled nothing for it, saying nothing: the apiserver holds a pod's spec.schedulerName to a
    DNS subdomain, so no pod could ever name it."""
    if where == "environment":
        monkeypatch.setenv("VOLSCHED_SCHEDULER_NAMES", names)
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--scheduler-names", names] if where == "flag" else [])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "error: argument --scheduler-names: scheduler name: " in err, err
    assert "is not valid: a DNS subdomain" in err and "no pod can name it in spec.schedulerName" in err


def test_good_scheduler_names_are_taken() -> None:
    args = build_parser().parse_args(["--scheduler-names", "volsched, volcano,sched.example.com"])
    assert parse_scheduler_names(args.scheduler_names) == {"volsched", "volcano", "sched.example.com"}


@pytest.mark.parametrize("key", ["", "scheduler config", "a/b", "x" * 254])
def test_a_config_key_no_configmap_can_hold_is_refused_at_parse(
    key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: it was taken, and the ConfigMap was said to have no such key (at INFO) while the
    built-in config ran in place of the one the user wrote, with nothing refused at start."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--config-key", key])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert f"error: argument --config-key: {key!r} is not valid: a ConfigMap key" in err, err


@pytest.mark.parametrize(
    "service", ["svc", "ns/svc:https", "ns/", "/svc", "ns/svc:0", "ns/svc:65536", "ns/a/b", "ns/svc:"]
)
def test_a_webhook_service_not_namespace_name_port_is_refused_at_parse(
    service: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: it was read only once the cache had synced, to make the webhook server or its
    certificate: the operator started, then failed there (a ValueError) instead of refusing the flag."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--webhook-service", service])
    assert exit_.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            f"error: argument --webhook-service: expected namespace/name[:port] (a port from 1 to 65535), "
            f"got {service!r}"
        )
    )


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--bind-backlog", "0"], "bind_backlog", 0),
        (["--bind-workers-first", "0"], "bind_workers_first", 0),  # one starts as binds wait
        (["--metrics-port", "0"], "metrics_port", 0),  # any free port
        (["--webhook-port", "65535"], "webhook_port", 65535),
        (["--min-gap", "0"], "min_gap", 0.0),
        (["--max-idle", "0"], "max_idle", 0.0),  # never skip
        (["--period", "0.2"], "period", 0.2),
        (["--qps", "0"], "qps", 0.0),
        (["--thread-slice", "0"], "thread_slice", 0.0),  # the kernel's own
        (["--thread-slice", "0.1"], "thread_slice", 0.1),
        (["--thread-slice", "100"], "thread_slice", 100.0),
    ],
)
def test_the_ends_of_each_range_are_taken(argv: list[str], field: str, value: float) -> None:
    assert getattr(build_parser().parse_args(argv), field) == value


def test_the_help_says_each_numeric_flags_range() -> None:
    numeric = [
        a
        for a in build_parser()._actions
        if a.option_strings and getattr(a.type, "__qualname__", "").partition(".")[0] in ("integer", "number")
    ]
    assert len(numeric) == 14
    for action in numeric:
        assert action.help is not None and (">" in action.help or " to " in action.help), (
            action.option_strings
        )


@pytest.mark.parametrize(
    "argv", [["run", "--period", "2"], ["run", "--", "--period", "2"]], ids=["plain", "after --"]
)
def test_volsched_run_hands_the_operator_its_options_with_or_without_a_double_dash(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``volsched run -- --period 2`` was refused: the operator's main, which takes one leading ``--``
    off, was handed two."""
    import volsched.cli as cli

    given: list[list[str]] = []
    monkeypatch.setattr(cli, "_run", lambda args: given.append(list(args.operator_args)) or 0)
    assert cli.main(argv) == 0
    assert given == [["--", "--period", "2"]]


@pytest.mark.parametrize(
    "argv",
    [["run"], ["run", "--"], ["run", "--", "--", "x"], ["run", "--help"], ["run", "run", "--kubeconfig=k"]],
)
def test_volsched_run_makes_no_other_commands_parser_and_hands_the_operator_what_the_parser_would(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``volsched run``'s arguments go to the operator as the command line's parser hands them (after one
    ``--``), without the parser of every command made first (simulate's dozens of options, before the
    first pages are asked for)."""
    import volsched.cli as cli

    parsed = cli.build_parser().parse_args(argv if argv[1:2] == ["--"] else ["run", "--", *argv[1:]])
    given: list[list[str]] = []
    monkeypatch.setattr(cli, "_run", lambda args: given.append(list(args.operator_args)) or 0)

    def no_parser() -> None:
        raise AssertionError("the parser of every command made for volsched run")

    monkeypatch.setattr(cli, "build_parser", no_parser)
    assert cli.main(argv) == 0
    assert given == [parsed.operator_args]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--bind-workers", "8", "--bind-workers-first", "16"],
            "--bind-workers-first 16 is more than --bind-workers 8",
        ),
        (["--bind-workers-first", "200"], "--bind-workers-first 200 is more than --bind-workers 128"),
        (
            ["--bind-workers", "0", "--bind-workers-first", "2"],
            "--bind-workers-first 2 is more than --bind-workers 0",
        ),
    ],
)
def test_more_first_bind_workers_than_bind_workers_is_refused_at_parse_naming_both(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The port never starts more than --bind-workers: a larger --bind-workers-first was silently capped."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")


@pytest.mark.parametrize(
    ("argv", "first"),
    [
        ([], 32),
        (["--bind-workers", "8"], 8),  # left out, it fits the fewer bind workers
        (["--bind-workers", "0"], 1),
        (["--bind-workers", "8", "--bind-workers-first", "8"], 8),
        (["--bind-workers", "0", "--bind-workers-first", "1"], 1),  # 0 is one, for both
        (["--bind-workers", "1", "--bind-workers-first", "0"], 0),
    ],
)
def test_first_bind_workers_up_to_bind_workers_are_taken(argv: list[str], first: int) -> None:
    assert settings_from_args(build_parser().parse_args(argv)).writer.bind_workers_first == first


def test_every_flag_says_what_it_is_in_help() -> None:
    for action in build_parser()._actions:
        assert action.help, action.option_strings
