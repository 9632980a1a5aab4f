"""``volsched run``'s webhook certificate flags that cannot work together are refused at once (exit 2,
saying why on stderr) by the parser, as every other flag that does not fit, before anything talks to a
cluster."""

from __future__ import annotations

import pytest

from volsched.operator import main

CASES = [
    (["--webhook-cert-dir", "/certs", "--webhook-cert-secret", "s", "--webhook-service", "ns/hooks"],
     "--webhook-cert-dir and --webhook-cert-secret exclude each other"),
    (["--webhook-cert-secret", "s"], "--webhook-cert-secret needs a name every replica answers to"),
    (["--webhook-cert-secret", "s", "--webhook-host", "10.0.0.7"], "needs a name every replica answers to"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "said"), CASES)
def test_refused(args: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--webhook-port", "9443", *args])
    assert refused.value.code == 2
    out, err = capsys.readouterr()
    assert said in err and said not in out
