"""The built-in actions and plugins are imported when a config names them, not all with the registry:
the default config's start pays for its own engine only, and a config naming the others later (a reload
of the ConfigMap) loads, makes and checks them as before. Each case runs in a fresh interpreter, where
nothing has imported the engine yet."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest

from volsched.framework import registry

#: Built-ins the default config does not name.
UNNAMED = {
    "volsched.actions.preempt",
    "volsched.actions.reclaim",
    "volsched.actions.shuffle",
    "volsched.plugins.usage",
    "volsched.plugins.rescheduling",
    "volsched.plugins.minruntime",
}

EVERY_BUILTIN = textwrap.dedent("""\
    actions: "enqueue, allocate, preempt, reclaim, backfill, shuffle"
    tiers:
    - plugins:
      - name: priority
      - name: gang
      - name: conformance
      - name: pdb
      - name: minruntime
    - plugins:
      - name: overcommit
      - name: drf
      - name: predicates
      - name: proportion
      - name: reservation
      - name: nodeorder
      - name: binpack
      - name: usage
      - name: rescheduling
        arguments:
          strategies: [{name: podLifeTime, params: {maxPodLifeTimeSeconds: 3600}}]
    """)


def fresh(code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter; it ends by printing one JSON document."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_default_config_imports_only_the_engine_it_names() -> None:
    got = fresh("""\
        import json, sys
        from volsched.framework.registry import load_config, make_actions, make_plugins
        config = load_config()
        actions, plugins = make_actions(config), make_plugins(config)
        print(json.dumps({
            "actions": [a.name for a in actions],
            "plugins": [p.name for p in plugins],
            "modules": sorted(m for m in sys.modules if m.startswith(("volsched.actions.", "volsched.plugins."))),
        }))
        """)
    assert got["actions"] == ["enqueue", "allocate", "backfill"]
    assert got["plugins"] == [
        "priority", "gang", "conformance", "pdb", "overcommit", "drf", "predicates", "proportion",
        "reservation", "nodeorder", "binpack",
    ]  # fmt: skip
    modules = set(got["modules"])  # type: ignore[arg-type]
    assert "volsched.plugins.binpack" in modules
    assert "volsched.actions.allocate" in modules
    assert modules.isdisjoint(UNNAMED)


def test_a_config_naming_the_others_later_loads_makes_and_checks_them() -> None:
    got = fresh(f"""\
        import json
        from volsched.framework.registry import load_config, make_actions, make_plugins
        from volsched.model.errors import InputError
        load_config()  # the operator's first config, then a reload naming every built-in
        config = load_config(text={EVERY_BUILTIN!r})
        bad = "actions: preempt\\ntiers:\\n- plugins:\\n  - name: usage\\n    arguments: {{nonsense: 1}}\\n"
        try:
            load_config(text=bad)
            refused = ""
        except InputError as exc:
            refused = str(exc)
        print(json.dumps({{
            "actions": [a.name for a in make_actions(config)],
            "plugins": [p.name for p in make_plugins(config)],
            "refused": refused,
        }}))
        """)
    assert got["actions"] == ["enqueue", "allocate", "preempt", "reclaim", "backfill", "shuffle"]
    assert got["plugins"] == [
        "priority", "gang", "conformance", "pdb", "minruntime", "overcommit", "drf", "predicates",
        "proportion", "reservation", "nodeorder", "binpack", "usage", "rescheduling",
    ]  # fmt: skip
    assert "nonsense" in str(got["refused"])  # the plugin imported on the reload checks its arguments


def test_a_config_placing_no_pod_names_the_action_it_lacks_though_none_was_imported() -> None:
    got = fresh("""\
        import json
        from volsched.framework.registry import load_config, placement_gap
        config = load_config(text="actions: preempt\\ntiers:\\n- plugins:\\n  - name: gang\\n")
        print(json.dumps({"gap": placement_gap(config)}))
        """)
    assert got["gap"] == (
        "the scheduler config's actions (preempt) place no pod that requests resources: allocate is not among them"
    )


def test_an_unknown_name_is_refused_with_every_builtin_listed_before_any_is_imported() -> None:
    got = fresh("""\
        import json, sys
        from volsched.framework.registry import load_config
        from volsched.model.errors import InputError
        messages = []
        for text in ("actions: allocate\\ntiers:\\n- plugins:\\n  - name: nosuch\\n",
                     "actions: nosuch\\ntiers:\\n- plugins:\\n  - name: gang\\n"):
            try:
                load_config(text=text)
            except InputError as exc:
                messages.append(str(exc))
        print(json.dumps({"messages": messages,
                          "imported": any(m.startswith("volsched.plugins.") for m in sys.modules)}))
        """)
    plugins, actions = got["messages"]  # type: ignore[misc]
    assert plugins.endswith(
        "unknown plugin 'nosuch'; known plugins: binpack, conformance, drf, gang, minruntime, nodeorder, "
        "overcommit, pdb, predicates, priority, proportion, rescheduling, reservation, usage"
    )
    assert actions.endswith(
        "unknown action 'nosuch'; known actions: allocate, backfill, enqueue, preempt, reclaim, shuffle"
    )
    assert got["imported"] is False


def test_every_builtin_module_registers_the_name_it_is_listed_under() -> None:
    registry.load_builtins()
    assert set(registry.ACTIONS) >= set(registry._BUILTIN_ACTIONS)
    assert set(registry.PLUGINS) >= set(registry._BUILTIN_PLUGINS)
    for name in registry._BUILTIN_ACTIONS:
        assert registry.ACTIONS[name].__module__ == f"volsched.actions.{name}"  # type: ignore[attr-defined]
    for name in registry._BUILTIN_PLUGINS:
        assert registry.PLUGINS[name].__module__ == f"volsched.plugins.{name}"  # type: ignore[attr-defined]


def test_a_class_registered_while_its_module_still_imports_is_handed_out_once_the_import_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    registered, release, either = threading.Event(), threading.Event(), threading.Event()

    def importing(module: str) -> None:  # a built-in's module: its class registered as the body runs
        registry.PLUGINS["slowpoke"] = object  # type: ignore[assignment]
        registered.set()
        release.wait()
        log.append("import ended")

    class Watched:
        """The registry's import lock, telling when a second thread asks for it."""

        def __init__(self) -> None:
            self.lock, self.entered = threading.RLock(), 0

        def __enter__(self) -> None:
            self.entered += 1
            if self.entered > 1:
                either.set()
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    monkeypatch.setattr(registry, "_BUILTIN_PLUGINS", (*registry._BUILTIN_PLUGINS, "slowpoke"))
    monkeypatch.setattr(registry, "importlib", SimpleNamespace(import_module=importing))
    monkeypatch.setattr(registry, "_import_lock", Watched())
    monkeypatch.delitem(registry.PLUGINS, "slowpoke", raising=False)

    def use() -> None:
        registry.plugin_class("slowpoke")
        log.append("handed out")
        either.set()

    importer = threading.Thread(target=registry.plugin_class, args=("slowpoke",))
    importer.start()
    registered.wait()
    user = threading.Thread(target=use)
    user.start()
    either.wait()  # the user waits for the lock (or, wrongly, has the class already)
    release.set()
    importer.join()
    user.join()
    assert log == ["import ended", "handed out"]
