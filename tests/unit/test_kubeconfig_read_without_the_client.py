"""volsched reads a kubeconfig's common forms and the pod's service account itself, as the Kubernetes
client's loader reads them, and leaves the rest (exec plugins, auth providers...) to that loader."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.kube import kubeconfig
from volsched.kube.client import bearer_token, library_api_client, load_configuration, new_api_client
from volsched.kube.kubeconfig import ClientConfig, in_cluster, read_kubeconfig
from volsched.redaction import redact

TOKEN = "s3cr3t-token-abcdef"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBCA==\n-----END CERTIFICATE-----\n"
CERT_PEM = "-----BEGIN CERTIFICATE-----\nMIIBCB==\n-----END CERTIFICATE-----\n"
KEY_PEM = "-----BEGIN PRIVATE KEY-----\nMIIBKE==\n-----END PRIVATE KEY-----\n"


def _b64(text: str) -> str:
    return base64.standard_b64encode(text.encode()).decode()


def _write(tmp: Path, cluster: dict[str, Any], user: dict[str, Any] | None) -> Path:
    """A kubeconfig with one context (and a second, unused one), its CA, cert and key files beside it."""
    (tmp / "ca.crt").write_text(CA_PEM)
    (tmp / "client.crt").write_text(CERT_PEM)
    (tmp / "client.key").write_text(KEY_PEM)
    (tmp / "token").write_text(f"{TOKEN}\n")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "here",
        "contexts": [
            {"name": "other", "context": {"cluster": "far", "user": "nobody"}},
            {"name": "here", "context": {"cluster": "near", "user": "me", "namespace": "team"}},
        ],
        "clusters": [
            {"name": "far", "cluster": {"server": "https://far.example:6443"}},
            {"name": "near", "cluster": cluster},
        ],
        "users": [{"name": "nobody", "user": {"token": "not-this-one"}}]
        + ([{"name": "me", "user": user}] if user is not None else []),
    }
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def _client_loader(path: Path) -> Any:
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=cfg)
    return cfg


def _content(path: str | None) -> str | None:
    return None if path is None else Path(path).read_text()


def _seen(cfg: Any) -> dict[str, Any]:
    """What volsched's HTTP path and kopf's login read of a configuration (files by their content)."""
    return {
        "host": cfg.host,
        "ca": _content(cfg.ssl_ca_cert),
        "cert": _content(cfg.cert_file),
        "key": _content(cfg.key_file),
        "verify": cfg.verify_ssl,
        "server name": cfg.tls_server_name,
        "proxy": cfg.proxy,
        "token": bearer_token(cfg),
        "auth": cfg.auth_settings().get("BearerToken", {}).get("value"),
    }


#: Kubeconfigs volsched reads itself: (cluster, user).
READ_HERE = {
    "token and CA file": (
        {"server": "https://127.0.0.1:6443/", "certificate-authority": "ca.crt"},
        {"token": TOKEN},
    ),
    "CA, client certificate and key as data (kind's)": (
        {"server": "https://127.0.0.1:6443", "certificate-authority-data": _b64(CA_PEM)},
        {"client-certificate-data": _b64(CERT_PEM), "client-key-data": _b64(KEY_PEM)},
    ),
    "client certificate and key files, data preferred to a file": (
        {
            "server": "https://10.0.0.1",
            "certificate-authority": "ca.crt",
            "certificate-authority-data": _b64(KEY_PEM),
        },
        {"client-certificate": "client.crt", "client-key": "client.key"},
    ),
    "a token file, no verification, a server name, a proxy": (
        {
            "server": "https://10.0.0.1:443",
            "insecure-skip-tls-verify": True,
            "tls-server-name": "api.internal",
            "proxy-url": "http://proxy:3128",
        },
        {"tokenFile": "token"},
    ),
    "plain http: no TLS files read": (
        {"server": "http://127.0.0.1:8080", "certificate-authority": "missing.crt"},
        {"token": TOKEN, "client-certificate": "missing.crt"},
    ),
    "no user": ({"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"}, None),
}


@pytest.mark.parametrize("case", READ_HERE)
def test_a_common_kubeconfig_reads_as_the_clients_loader_reads_it(case: str, tmp_path: Path) -> None:
    cluster, user = READ_HERE[case]
    if user is None:  # the context names no user
        path = _write(tmp_path, cluster, {})
        doc = yaml.safe_load(path.read_text())
        del doc["contexts"][1]["context"]["user"]
        path.write_text(yaml.safe_dump(doc))
    else:
        path = _write(tmp_path, cluster, user)
    ours = read_kubeconfig(str(path))
    assert isinstance(ours, ClientConfig), ours
    theirs = _client_loader(path)
    seen = _seen(ours)
    if user and "tokenFile" in user:
        # The client sends the file as it is (its newline too, which no header may carry); volsched strips it.
        assert _seen(theirs)["token"] == f"{TOKEN}\n"
        assert seen["token"] == TOKEN
        seen["token"], seen["auth"] = f"{TOKEN}\n", f"Bearer {TOKEN}\n"
    assert seen == _seen(theirs)
    assert TOKEN not in repr(ours)


#: Kubeconfigs left to the client's loader, and the field the reason names.
DECLINED = {
    "an exec plugin": ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x"}}, "exec"),
    "an auth provider": ({"auth-provider": {"name": "oidc", "config": {}}}, "auth-provider"),
    "basic auth": ({"username": "u", "password": "p"}, "password, username"),
    "impersonation": ({"token": TOKEN, "as": "someone"}, "as"),
}


@pytest.mark.parametrize("case", DECLINED)
def test_what_the_reader_does_not_know_is_left_to_the_clients_loader_by_name(
    case: str, tmp_path: Path
) -> None:
    user, named = DECLINED[case]
    path = _write(tmp_path, {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"}, user)
    assert read_kubeconfig(str(path)) == f"it uses {named}"


def test_a_missing_file_or_context_is_left_to_the_clients_loader_and_its_error(tmp_path: Path) -> None:
    path = _write(tmp_path, {"server": "https://127.0.0.1:6443", "certificate-authority": "gone.crt"}, {})
    assert read_kubeconfig(str(path)) == "a file it names does not exist"
    doc = yaml.safe_load(path.read_text())
    doc["current-context"] = "nowhere"
    path.write_text(yaml.safe_dump(doc))
    assert read_kubeconfig(str(path)) == "no single current context"
    from volsched.model.errors import InputError

    with pytest.raises(
        InputError
    ) as error:  # (the loader's ConfigException, said in a line: not a traceback)
        load_configuration(str(path))
    assert str(error.value).startswith(f"kubeconfig {path}: Invalid kube-config file."), error.value


def test_an_exec_plugin_runs_through_the_clients_loader_and_its_token_is_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = tmp_path / "plugin.py"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": TOKEN},
    }
    plugin.write_text(f"import json\nprint(json.dumps({credential!r}))\n")
    exec_ = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(plugin)],
    }
    path = _write(
        tmp_path, {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"}, {"exec": exec_}
    )
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        cfg = load_configuration(str(path), pool_size=8)
    assert not isinstance(cfg, ClientConfig)  # the client's Configuration
    assert bearer_token(cfg) == TOKEN
    assert cfg.connection_pool_maxsize == 8
    assert new_api_client(cfg).configuration is cfg  # the client's ApiClient serves volsched's HTTP path too
    assert [r.getMessage() for r in caplog.records] == [
        f"kubeconfig {path}: it uses exec; loaded by the Kubernetes client's loader"
    ]


def test_a_token_file_is_read_again_a_minute_later_and_every_token_is_kept_out_of_logs(
    tmp_path: Path,
) -> None:
    (tmp_path / "token").write_text("first-token-1234\n")
    now = [0.0]
    cfg = ClientConfig("https://h", token_file=str(tmp_path / "token"), clock=lambda: now[0])
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer first-token-1234"
    (tmp_path / "token").write_text("second-token-5678\n")
    now[0] = kubeconfig.TOKEN_REREAD - 1
    assert cfg.token() == "first-token-1234"
    now[0] = kubeconfig.TOKEN_REREAD
    assert cfg.token() == "second-token-5678"
    (tmp_path / "token").unlink()  # a file that cannot be read keeps the last token
    now[0] = 2 * kubeconfig.TOKEN_REREAD
    assert cfg.token() == "second-token-5678"
    assert redact("sent first-token-1234 and second-token-5678") == "sent *** and ***"
    assert "token-" not in repr(cfg)


def test_data_fields_are_written_to_private_files(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"server": "https://127.0.0.1:6443", "certificate-authority-data": _b64(CA_PEM)},
        {"client-certificate-data": _b64(CERT_PEM), "client-key-data": _b64(KEY_PEM)},
    )
    cfg = read_kubeconfig(str(path))
    assert isinstance(cfg, ClientConfig) and cfg.key_file is not None
    assert stat.S_IMODE(os.stat(cfg.key_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(cfg.key_file)).st_mode) == 0o700


def test_the_service_account_is_found_as_the_clients_loader_finds_it(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text(TOKEN)
    ca.write_text(CA_PEM)
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = in_cluster(env, token_path=str(token), ca_path=str(ca))
    assert cfg is not None
    assert (cfg.host, cfg.ssl_ca_cert, bearer_token(cfg)) == ("https://[fd00::1]:443", str(ca), TOKEN)
    from kubernetes import client
    from kubernetes.config.incluster_config import InClusterConfigLoader

    theirs = client.Configuration()
    InClusterConfigLoader(str(token), str(ca), environ=env).load_and_set(theirs)
    assert (theirs.host, theirs.ssl_ca_cert, bearer_token(theirs)) == (cfg.host, cfg.ssl_ca_cert, TOKEN)
    # Not a pod: no environment, or no token.
    assert in_cluster({}, token_path=str(token), ca_path=str(ca)) is None
    assert in_cluster(env, token_path=str(tmp_path / "none"), ca_path=str(ca)) is None
    token.write_text("")
    assert in_cluster(env, token_path=str(token), ca_path=str(ca)) is None


def test_the_clients_own_api_client_is_made_from_settings_read_here(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("one-token-1234")
    cfg = ClientConfig(
        "https://h:6443", ssl_ca_cert="/ca", verify_ssl=False, token_file=str(tmp_path / "token")
    )
    api = library_api_client(cfg)
    theirs = api.configuration
    assert (theirs.host, theirs.ssl_ca_cert, theirs.verify_ssl) == ("https://h:6443", "/ca", False)
    assert theirs.get_api_key_with_prefix("BearerToken") == "Bearer one-token-1234"
    assert json.loads(json.dumps(theirs.auth_settings()["BearerToken"]["value"])) == "Bearer one-token-1234"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "No such file or directory"),
        ("garbage: [\n", "not valid YAML at line 2, column 1: did not find expected node content"),
        (b"\xff\xfe", "not valid YAML or UTF-8 (UnicodeDecodeError)"),
    ],
    ids=["missing", "not-yaml", "not-utf8"],
)
def test_a_kubeconfig_that_cannot_be_read_is_refused_naming_the_file(
    tmp_path: Path, content: str | bytes | None, why: str
) -> None:
    from volsched.kube.client import read_configuration
    from volsched.model.errors import InputError

    path = tmp_path / "config"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as error:
        read_configuration(str(path))
    assert str(error.value) == f"kubeconfig {path}: cannot be read: {why}"


def test_volsched_run_with_a_kubeconfig_that_cannot_be_read_exits_2_naming_it(tmp_path: Path) -> None:
    """The defect: ``volsched run --kubeconfig`` a file missing or not YAML ended in a traceback (exit 1)."""
    import subprocess

    missing = tmp_path / "nope"
    done = subprocess.run(
        [sys.executable, "-m", "volsched", "run", "--kubeconfig", str(missing)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"volsched run: kubeconfig {missing}: cannot be read: No such file or directory\n",
    )


@pytest.mark.parametrize("named", [True, False], ids=["$KUBECONFIG", "~/.kube/config"])
def test_volsched_run_with_no_kubeconfig_at_all_exits_2_saying_so(tmp_path: Path, named: bool) -> None:
    """The defect: ``volsched run`` outside a pod on a machine with no kubeconfig (a fresh one, or
    ``$KUBECONFIG`` naming a file not there) handed the client's loader nothing, and ended in its
    traceback (exit 1); so did a kubeconfig the loader refuses (no current context)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    missing = tmp_path / "nope"
    if named:
        env["KUBECONFIG"] = str(missing)
    done = subprocess.run(
        [sys.executable, "-m", "volsched", "run"], capture_output=True, text=True, check=False, env=env
    )
    where = f"{missing} ($KUBECONFIG)" if named else f"{tmp_path}/.kube/config (~/.kube/config)"
    assert (done.returncode, done.stderr) == (
        2,
        f"volsched run: no kubeconfig: not in a pod with a service account, and no {where}; name one with "
        "--kubeconfig FILE or $KUBECONFIG\n",
    )
    no_context = tmp_path / "config"
    no_context.write_text("apiVersion: v1\nkind: Config\n")
    done = subprocess.run(
        [sys.executable, "-m", "volsched", "run", "--kubeconfig", str(no_context)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.endswith(
        f"volsched run: kubeconfig {no_context}: Invalid kube-config file. Expected key current-context in "
        f"{no_context}\n"
    ), done.stderr


def test_kubeconfig_naming_several_files_is_said_by_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``$KUBECONFIG`` naming several files (the client's loader merges them): what is said names them.
    The defect: the log line and the error said "kubeconfig (default)", not which files were read."""
    from volsched.model.errors import InputError

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = _write(tmp_path, {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"}, {})
    named = f"{path}{os.pathsep}{tmp_path / 'gone'}"
    monkeypatch.setenv("KUBECONFIG", named)
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        cfg = load_configuration()
    assert cfg.host == "https://127.0.0.1:6443"
    said = f"kubeconfig $KUBECONFIG ({named}): $KUBECONFIG names several files; loaded by the Kubernetes "
    assert [r.getMessage() for r in caplog.records] == [f"{said}client's loader"]
    nothing = f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"
    monkeypatch.setenv("KUBECONFIG", nothing)
    with pytest.raises(InputError) as error:
        load_configuration()
    assert (
        str(error.value)
        == f"kubeconfig $KUBECONFIG ({nothing}): Invalid kube-config file. No configuration found."
    )
