"""The deploy kit (deploy/, the Dockerfile, configs/agent/observe.toml) as an operator uses it.

Each test stands for a problem a review found: a unit that restarted a config error forever,
an install that made a host-changing example the live config, installed docs whose links
led nowhere, a DaemonSet image nothing built, a dashboard mixing units on one axis and
querying metrics the docs do not list. Static checks and one staged `deploy/install.sh`
run; nothing here needs the native module or a built binary.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Dict, List, Set

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
DOC_DIR = Path("usr/share/doc/tiermem")

# The top-level keys of an agent config that change nothing on the host: where the state
# file is, the loop period and the metrics endpoint. Every other section of AgentConfig
# (crates/tiermem-agent/src/config.rs) writes kernel settings or starts kdamonds.
OBSERVE_ONLY_KEYS = {"state_file", "interval", "metrics"}


def workspace_version() -> str:
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text(encoding="utf-8"))
    return cargo["workspace"]["package"]["version"]


def unit_sections(text: str) -> Dict[str, Dict[str, List[str]]]:
    """A systemd unit as {section: {key: [values]}} (keys may repeat)."""
    sections: Dict[str, Dict[str, List[str]]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"a setting before any section: {line}"
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(v: str) -> float:
    """A systemd time span as used here: `300`, `5s`, `5min`."""
    m = re.fullmatch(r"(\d+)\s*(s|sec|min|m)?", v)
    assert m, f"unexpected time span {v!r}"
    return int(m.group(1)) * (60 if m.group(2) in ("min", "m") else 1)


def test_the_unit_does_not_restart_a_config_error_and_gives_up_on_repeated_failures():
    units = unit_sections((REPO / "deploy/tiermem-agent.service").read_text(encoding="utf-8"))
    service, unit = units["Service"], units["Unit"]
    assert service["Restart"] == ["on-failure"]
    # Exit code 2 is bad input (docs/agent.md, "Exit codes"): a restart cannot fix it.
    prevent = " ".join(service.get("RestartPreventExitStatus", [])).split()
    assert "2" in prevent, "RestartPreventExitStatus=2 missing from [Service]"
    # The start limit belongs in [Unit] (moved there in systemd 230), and
    # must be reachable with the restart delay: Burst starts, RestartSec apart, fit in the
    # interval. The default (5 in 10 s) never is with RestartSec=5.
    for key in ("StartLimitIntervalSec", "StartLimitBurst"):
        assert key in unit, f"{key} missing from [Unit]"
        assert key not in service, f"{key} belongs in [Unit]"
    burst = int(unit["StartLimitBurst"][-1])
    interval = seconds(unit["StartLimitIntervalSec"][-1])
    restart_sec = seconds(service["RestartSec"][-1])
    assert burst >= 1 and burst * restart_sec < interval, (burst, restart_sec, interval)
    # The restores run whatever the outcome (a leading `-`), with the config the agent uses.
    for key in ("ExecStartPre", "ExecStopPost"):
        assert any(v.startswith("-") and "--restore" in v for v in service[key]), key


def agent_config_fields() -> Set[str]:
    """The top-level keys `AgentConfig` accepts (it denies unknown fields)."""
    src = (REPO / "crates/tiermem-agent/src/config.rs").read_text(encoding="utf-8")
    m = re.search(r"pub struct AgentConfig \{(.*?)\n\}", src, re.S)
    assert m, "AgentConfig not found in config.rs"
    body = m.group(1)
    # Fields marked #[serde(skip)] are not config keys.
    fields = set()
    skip = False
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#[serde(") and "skip" in line:
            skip = True
        fm = re.match(r"pub (\w+):", line)
        if fm:
            if not skip:
                fields.add(fm.group(1))
            skip = False
    assert {"state_file", "metrics", "numa_balancing", "tiering"} <= fields, fields
    return fields


def test_the_observe_config_changes_nothing_and_is_in_the_agent_schema():
    cfg = tomllib.loads((REPO / "configs/agent/observe.toml").read_text(encoding="utf-8"))
    fields = agent_config_fields()
    assert set(cfg) <= fields, f"keys the agent refuses: {set(cfg) - fields}"
    assert set(cfg) <= OBSERVE_ONLY_KEYS, f"host-changing sections: {set(cfg) - OBSERVE_ONLY_KEYS}"
    assert set(cfg["metrics"]) == {"listen"}
    # The agent's own checks (config.rs check_basics): a loopback ip:port, interval >= 10ms.
    host, _, port = cfg["metrics"]["listen"].rpartition(":")
    assert host in ("127.0.0.1", "[::1]") and port.isdigit()
    assert re.fullmatch(r"\d+(ms|s|m|h)", cfg["interval"])
    # The state file is where the unit's RuntimeDirectory and the DaemonSet's host path are.
    assert cfg["state_file"].startswith("/run/tiermem/")
    # The example keeps its sections (it is the operator's menu, installed beside).
    example = tomllib.loads((REPO / "configs/agent/example.toml").read_text(encoding="utf-8"))
    assert set(example) - OBSERVE_ONLY_KEYS, "example.toml lost its sections"


LINK = re.compile(r"\]\(\s*<?([^)\s>]*)")
# A reference definition: the whole line is `[label]: target` with an optional quoted title.
REF_DEF = re.compile(r"""^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)>?(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$""", re.M)


def relative_links(md: str) -> List[str]:
    """The relative file targets of a markdown page: inline links and images, and reference
    definitions, without their anchors; other sites (`scheme:`) and same-page anchors left out."""
    out = []
    for target in LINK.findall(md) + REF_DEF.findall(md):
        if not target or target.startswith("#") or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):
            continue
        out.append(target.split("#", 1)[0])
    return out


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    """deploy/install.sh run as its header says, staged with DESTDIR, with a stand-in binary."""
    tmp = tmp_path_factory.mktemp("install")
    fake = tmp / "tiermem"
    fake.write_text("#!/bin/sh\necho 'not tiermem'\n")
    fake.chmod(0o755)
    dest = tmp / "root"
    env = dict(os.environ, DESTDIR=str(dest))
    r = subprocess.run(
        ["sh", "deploy/install.sh", str(fake)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return dest


def test_install_makes_the_observe_only_config_live_and_puts_the_examples_beside(staged):
    live = staged / "etc/tiermem/agent.toml"
    assert live.read_bytes() == (REPO / "configs/agent/observe.toml").read_bytes()
    assert set(tomllib.loads(live.read_text(encoding="utf-8"))) <= OBSERVE_ONLY_KEYS
    assert stat.S_IMODE(live.stat().st_mode) == 0o600
    for example in sorted((REPO / "configs/agent").glob("*.toml")):
        installed = staged / DOC_DIR / "examples" / example.name
        assert installed.read_bytes() == example.read_bytes(), example.name
    assert os.access(staged / "usr/local/bin/tiermem", os.X_OK)


def test_install_keeps_an_existing_config(staged, tmp_path):
    dest = tmp_path / "root"
    (dest / "etc/tiermem").mkdir(parents=True)
    (dest / "etc/tiermem/agent.toml").write_text("# mine\n")
    fake = staged / "usr/local/bin/tiermem"
    r = subprocess.run(
        ["sh", "deploy/install.sh", str(fake)],
        cwd=REPO,
        env=dict(os.environ, DESTDIR=str(dest)),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert (dest / "etc/tiermem/agent.toml").read_text() == "# mine\n"


def test_every_path_the_unit_names_is_installed(staged):
    unit = (staged / "etc/systemd/system/tiermem-agent.service").read_text(encoding="utf-8")
    named = set()
    for word in re.split(r"[\s=]+", unit):
        path = word.lstrip("-").removeprefix("file://")
        if path.startswith(("/usr/", "/etc/")):
            named.add(path)
    assert "/usr/share/doc/tiermem/agent.md" in named and "/etc/tiermem/agent.toml" in named
    for path in sorted(named):
        assert (staged / path[1:]).exists(), f"the unit names {path}, which install.sh does not install"


def test_every_link_of_the_installed_docs_resolves_in_the_doc_dir(staged):
    doc = (staged / DOC_DIR).resolve()
    pages = sorted(doc.rglob("*.md"))
    names = {p.relative_to(doc).as_posix() for p in pages}
    assert {"agent.md", "security.md", "config.md"} <= names, names
    checked = 0
    for page in pages:
        for target in relative_links(page.read_text(encoding="utf-8")):
            resolved = (page.parent / target).resolve()
            where = f"{page.relative_to(doc)} links to {target}"
            assert resolved == doc or doc in resolved.parents, f"{where}, outside the doc dir"
            assert resolved.is_file(), f"{where}, which is not installed"
            checked += 1
    assert checked >= 3, checked


def configmap_agent_toml(yaml_text: str) -> str:
    """The ConfigMap's `agent.toml: |` block, unindented."""
    start = yaml_text.index("agent.toml: |\n") + len("agent.toml: |\n")
    lines = []
    for line in yaml_text[start:].splitlines():
        if line.startswith("    ") or not line.strip():
            lines.append(line[4:])
        else:
            break
    return "\n".join(lines).strip() + "\n"


def test_the_daemonset_names_the_image_the_dockerfile_builds_and_observes_only():
    version = workspace_version()
    tag = f"tiermem:{version}"
    yaml_text = (REPO / "deploy/kubernetes/tiermem-agent.yaml").read_text(encoding="utf-8")
    images = re.findall(r"^\s*image:\s*(\S+)\s*$", yaml_text, re.M)
    assert images and set(images) == {tag}, images
    policies = re.findall(r"^\s*imagePullPolicy:\s*(\S+)\s*$", yaml_text, re.M)
    assert policies == ["IfNotPresent"] * len(images), policies
    assert f"docker build -t {tag} ." in yaml_text, "the build command is not in the comment"
    # The ConfigMap's config is the observe-only one.
    observe = (REPO / "configs/agent/observe.toml").read_text(encoding="utf-8")
    assert tomllib.loads(configmap_agent_toml(yaml_text)) == tomllib.loads(observe)
    # The state file's directory is a host path, mounted in both containers (one anchor).
    state_dir = str(Path(tomllib.loads(observe)["state_file"]).parent)
    assert f"mountPath: {state_dir} " in yaml_text and f"path: {state_dir}," in yaml_text
    assert "volumeMounts: &mounts" in yaml_text and "volumeMounts: *mounts" in yaml_text
    for needed in ("hostPID: true", "privileged: true", "mountPath: /sys }", "mountPath: /sys/kernel/debug }"):
        assert needed in yaml_text, needed

    # The Dockerfile: bookworm build stage, slim runtime with the binary where the
    # DaemonSet runs it and the observe config where the agent reads it.
    docker = (REPO / "Dockerfile").read_text(encoding="utf-8")
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$", docker, re.M | re.I)
    assert len(froms) == 2, froms
    (build_image, stage), (runtime_image, _) = froms
    assert build_image.startswith("rust:") and build_image.endswith("bookworm") and stage, build_image
    assert runtime_image == "debian:bookworm-slim"
    assert re.search(r"^RUN\s+cargo build --release --locked -p tiermem-cli\s*$", docker, re.M)
    assert re.search(
        rf"^COPY\s+--from={re.escape(stage)}\s+\S*target/release/tiermem\s+/usr/local/bin/tiermem\s*$", docker, re.M
    )
    assert re.search(r"^COPY\s+configs/agent/observe.toml\s+/etc/tiermem/agent.toml\s*$", docker, re.M)
    assert f'org.opencontainers.image.version="{version}"' in docker
    assert f"docker build -t {tag} ." in docker
    assert '"/usr/local/bin/tiermem", "agent"' in yaml_text
    ignored = {
        l.strip().rstrip("/")
        for l in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if l.strip() and not l.startswith("#")
    }
    assert {"target", ".git", "reports", "out"} <= ignored, ignored


def section(md: str, title: str) -> str:
    start = md.index(f"\n## {title}\n")
    end = md.find("\n## ", start + 1)
    return md[start : end if end >= 0 else len(md)]


def exported_metrics() -> Set[str]:
    """The families metrics.rs renders: the names passed to `family(o, ...)` and `single(o, ...)`."""
    src = (REPO / "crates/tiermem-agent/src/metrics.rs").read_text(encoding="utf-8")
    src = src.split("#[cfg(test)]", 1)[0]
    names = set(re.findall(r"\b(?:family|single)\(\s*(?:&mut\s+)?o,\s*\"(tiermem_[a-z0-9_]+)\"", src))
    assert len(names) >= 10, names
    return names


def vmstat_counters() -> Set[str]:
    src = (REPO / "crates/tiermem-agent/src/metrics.rs").read_text(encoding="utf-8")
    m = re.search(r"VMSTAT_COUNTERS: \[&str; \d+\] = \[(.*?)\];", src, re.S)
    assert m
    return set(re.findall(r"\"([a-z0-9_]+)\"", m.group(1)))


def documented_metrics() -> Set[str]:
    md = (REPO / "docs/agent.md").read_text(encoding="utf-8")
    return set(re.findall(r"\btiermem_[a-z0-9_]+", section(md, "Metrics")))


def dashboard_targets():
    dash = json.loads((REPO / "deploy/grafana-dashboard.json").read_text(encoding="utf-8"))
    for panel in dash["panels"]:
        yield panel, panel.get("targets", [])


METRIC = re.compile(r"\btiermem_[a-z0-9_]+")


def test_the_docs_list_exactly_the_metrics_the_agent_exports():
    exported, documented = exported_metrics(), documented_metrics()
    assert documented - exported == set(), f"listed in docs/agent.md, not exported: {documented - exported}"
    assert exported - documented == set(), f"exported, not listed in docs/agent.md: {exported - documented}"
    md = section((REPO / "docs/agent.md").read_text(encoding="utf-8"), "Metrics")
    missing = {c for c in vmstat_counters() if f"`{c}`" not in md}
    assert not missing, f"vmstat counters not listed: {missing}"


def test_the_dashboard_queries_only_exported_and_documented_metrics():
    exported, documented = exported_metrics(), documented_metrics()
    counters = vmstat_counters()
    seen = set()
    for panel, targets in dashboard_targets():
        assert targets, f"panel {panel['title']!r} has no queries"
        for t in targets:
            names = METRIC.findall(t["expr"])
            assert len(names) == 1, f"one family per query: {t['expr']}"
            name = names[0]
            assert name in exported, f"{name} ({panel['title']!r}) is not exported by the agent"
            assert name in documented, f"{name} ({panel['title']!r}) is not listed in docs/agent.md"
            for sel in re.findall(r'counter=~?"([^"]*)"', t["expr"]):
                unknown = set(sel.split("|")) - counters
                assert not unknown, f"vmstat counters the agent does not export: {unknown}"
            seen.add(name)
    assert len(seen) >= 10, seen


def unit_kind(name: str) -> str:
    base = name[: -len("_total")] if name.endswith("_total") else name
    for suffix in ("bytes", "seconds", "permil"):
        if base.endswith("_" + suffix):
            return suffix
    return "count"


# Grafana units a panel of each (kind, rate?) may use.
UNITS = {
    ("bytes", False): {"bytes", "decbytes"},
    ("bytes", True): {"Bps", "binBps"},
    ("seconds", True): {"percentunit", "short", "none"},
    ("count", False): {"short", "none"},
    ("count", True): {"ops", "cps"},
    ("permil", False): {"short", "none"},
}


def test_every_panel_has_one_unit_and_rates_its_counters():
    for panel, targets in dashboard_targets():
        title = panel["title"]
        kinds = set()
        for t in targets:
            expr = t["expr"]
            (name,) = METRIC.findall(expr)
            counter = name.endswith("_total")
            rated = re.search(rf"\brate\(\s*{name}\b", expr) is not None
            assert rated == counter, f"{title!r}: {expr} ({'a counter: rate() it' if counter else 'a gauge'})"
            kinds.add((unit_kind(name), rated))
        assert len(kinds) == 1, f"panel {title!r} mixes units: {kinds}"
        unit = panel["fieldConfig"]["defaults"].get("unit")
        (kind,) = kinds
        assert unit in UNITS[kind], f"panel {title!r}: unit {unit!r} for {kind}"
        for o in panel["fieldConfig"].get("overrides", []):
            assert all(p.get("id") != "unit" for p in o.get("properties", [])), f"{title!r} overrides the unit"


def test_prometheus_scrapes_the_observe_configs_endpoint():
    prom = (REPO / "deploy/prometheus.yml").read_text(encoding="utf-8")
    listen = tomllib.loads((REPO / "configs/agent/observe.toml").read_text(encoding="utf-8"))["metrics"]["listen"]
    assert re.findall(r'targets:\s*\[\s*"([^"]+)"\s*\]', prom) == [listen]
    assert re.search(r"^\s*metrics_path:\s*/metrics\s*$", prom, re.M)
