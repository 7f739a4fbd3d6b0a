"""Generate realistic, deterministic fleets for the benchmarks: a git repo and a cluster snapshot.

Usage: ``python bench/generate.py SCENARIO OUT_DIR`` (or ``--list``), ``--verify N`` checks the
Python rendering against ``kubectl kustomize`` for N apps.

A scenario is a number of Argo CD Applications, each a kustomize base + ``overlays/prod`` overlay
(namespace, labels, images, replicas) in one git repository, built with testdata/make_repo.py's
``build_repo`` (pinned author, dates and config: identical SHAs everywhere). Each app is made of
*units* of 10 objects: a Deployment with its Service, ConfigMap, Secret, Role and RoleBinding, and
a StatefulSet with its headless Service, ConfigMap and Secret.

The snapshot (``kind: List`` YAML, like ``kubectl get -A -o yaml --show-managed-fields``) holds
what a real API server returns after Argo CD applied the render client-side
(``kubectl apply --field-manager=argocd-controller``): server defaults, status, uid,
resourceVersion, generation, managedFields (argocd-controller, kube-controller-manager's status
entry), the last-applied-configuration and tracking-id annotations (modelled on
testdata/apiserver/incident-0*.json). Untracked noise a real export has is there too: one
ReplicaSet per Deployment (owned, carrying the copied tracking-id) and ``kube-root-ca.crt`` per
namespace. A seeded few percent of objects drifted the ways people drift them: ``kubectl scale``
(manager kubectl, /scale, no time), ``kubectl edit`` (kubectl-edit), ``kubectl set image``
(kubectl-set), a ConfigMap edited by hand. ``meta.json`` lists them, so a run can be checked.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent

GENERATOR_VERSION = "3"  # bump when the output changes, so cached fixtures are rebuilt
# 3: also writes snapshot.json (the same objects as snapshot.yaml, one JSON document a line)
REPO_URL = "https://github.com/example/fleet-gitops.git"
REGISTRY = "registry.example.com/shop"
COMMIT_DATE = "2026-11-23T09:00:00Z"
SYNC_TIME = "2026-11-30T04:01:34Z"
STATUS_TIME = "2026-11-30T04:01:43Z"
EDIT_TIME = "2026-11-30T06:12:09Z"
UNIT_OBJECTS = 10

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True)
class Scenario:
    name: str
    apps: int
    units: int  # per app; objects per app = 10 * units
    drift: float = 0.03  # fraction of tracked objects drifted
    seed: int = 8
    doc: str = ""

    @property
    def objects(self) -> int:
        return self.apps * self.units * UNIT_OBJECTS


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("one-app-2000", 1, 200, doc="(a) one app of 2,000 objects"),
        Scenario("fleet-500x20", 500, 2, doc="(b) 500 apps of 20 objects"),
        Scenario("one-app-10000", 1, 1000, doc="(c) 10,000 objects in one app and snapshot"),
        Scenario("one-app-2500", 1, 250, doc="memory scaling: 2,500 objects"),
        Scenario("one-app-5000", 1, 500, doc="memory scaling: 5,000 objects"),
        Scenario("smoke", 3, 2, drift=0.2, doc="tiny, for checking the generator"),
    )
}


# --------------------------------------------------------------------------- YAML out

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./:-]*")
_NOT_PLAIN = frozenset(
    w
    for word in ("yes", "no", "true", "false", "on", "off", "null")
    for w in (word, word.title(), word.upper())
)
_LITERAL_OK = re.compile(r"[ -~\n]*")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and not text.endswith(":") and text not in _NOT_PLAIN:
        return text
    return json.dumps(text)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Block-style YAML of JSON-like `value` (what `kubectl get -o yaml` looks like), much faster
    than PyYAML's pure-Python representer; multi-line strings become `|` literals."""
    if isinstance(value, dict):
        for key, sub in value.items():
            head = f"{indent}{_scalar(key)}:"
            _emit_child(head, sub, indent, out)
    elif isinstance(value, list):
        for sub in value:
            _emit_child(f"{indent}-", sub, indent, out, in_list=True)


def _emit_child(head: str, sub: Any, indent: str, out: list[str], *, in_list: bool = False) -> None:
    if isinstance(sub, dict) and sub:
        if in_list:  # "- key: value" with the rest of the mapping aligned under the key
            first = len(out)
            _emit(sub, indent + "  ", out)
            out[first] = f"{head} {out[first][len(indent) + 2 :]}"
        else:
            out.append(head)
            _emit(sub, indent + "  ", out)
    elif isinstance(sub, list) and sub:
        if in_list:
            first = len(out)
            _emit(sub, indent + "  ", out)
            out[first] = f"{head} {out[first][len(indent) + 2 :]}"
        else:
            out.append(head)
            _emit(sub, indent, out)  # kubectl style: list items at the key's indent
    elif isinstance(sub, dict):
        out.append(f"{head} {{}}")
    elif isinstance(sub, list):
        out.append(f"{head} []")
    elif (
        isinstance(sub, str)
        and sub.endswith("\n")
        and not sub.endswith("\n\n")
        and _LITERAL_OK.fullmatch(sub)
        and not any(line != line.strip() or not line for line in sub[:-1].split("\n"))
    ):
        out.append(f"{head} |")
        out.extend(f"{indent}  {line}" for line in sub[:-1].split("\n"))
    else:
        out.append(f"{head} {_scalar(sub)}")


def dump_yaml(value: Any) -> str:
    out: list[str] = []
    _emit(value, "", out)
    return "\n".join(out) + "\n"


def dump_yaml_all(values: list[Any]) -> str:
    return "---\n".join(dump_yaml(v) for v in values)


# --------------------------------------------------------------------------- git side (base)


def _build_repo(src: Path, dest: Path) -> list[str]:
    """testdata/make_repo.py's build_repo (a script, not a package: loaded by path)."""
    spec = importlib.util.spec_from_file_location("make_repo", ROOT / "testdata" / "make_repo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module = sys.modules.setdefault("make_repo", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    build: Callable[[Path, Path], list[str]] = module.build_repo
    return build(src, dest)


def _app_names(scenario: Scenario) -> list[str]:
    if scenario.apps == 1:
        return ["shop"]
    return [f"shop-{i:04d}" for i in range(scenario.apps)]


def base_unit(u: int) -> list[dict[str, Any]]:
    """The 10 objects of unit `u` as written in git (no namespace; the overlay sets it)."""
    web, db = f"web-{u:04d}", f"db-{u:04d}"
    web_labels = {"app.kubernetes.io/name": web, "app.kubernetes.io/component": "web"}
    db_labels = {"app.kubernetes.io/name": db, "app.kubernetes.io/component": "database"}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": web, "labels": dict(web_labels)},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app.kubernetes.io/name": web}},
                "template": {
                    "metadata": {
                        "labels": dict(web_labels),
                        "annotations": {"prometheus.io/scrape": "true"},
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": f"{REGISTRY}/web:1.4.2",
                                "args": ["--config=/etc/app/app.properties", "--port=8080"],
                                "ports": [{"name": "http", "containerPort": 8080}],
                                "env": [
                                    {"name": "LOG_LEVEL", "value": "info"},
                                    {"name": "DB_HOST", "value": f"{db}"},
                                    {
                                        "name": "DB_PASSWORD",
                                        "valueFrom": {
                                            "secretKeyRef": {
                                                "name": f"{db}-creds",
                                                "key": "password",
                                            }
                                        },
                                    },
                                ],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "128Mi"},
                                    "limits": {"cpu": "500m", "memory": "256Mi"},
                                },
                                "readinessProbe": {
                                    "httpGet": {"path": "/healthz", "port": "http"},
                                    "periodSeconds": 10,
                                },
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": f"{web}-config"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": web, "labels": dict(web_labels)},
            "spec": {
                "selector": {"app.kubernetes.io/name": web},
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{web}-config", "labels": dict(web_labels)},
            "data": {
                "LOG_LEVEL": "info",
                "app.properties": "".join(
                    f"feature.flag{n}=" + ("true" if (u + n) % 3 else "false") + "\n"
                    for n in range(12)
                )
                + f"server.port=8080\ndb.host={db}\n",
            },
        },
        _secret(f"{web}-creds", web_labels, u, string_data=u % 4 == 0),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": web, "labels": dict(web_labels)},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [f"{web}-creds"],
                    "verbs": ["get"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": web, "labels": dict(web_labels)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": web},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "shop-devs"}
            ],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": db, "labels": dict(db_labels)},
            "spec": {
                "serviceName": db,
                "replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": db}},
                "template": {
                    "metadata": {"labels": dict(db_labels)},
                    "spec": {
                        "containers": [
                            {
                                "name": "postgres",
                                "image": "docker.io/library/postgres:16.4",
                                "ports": [{"name": "pg", "containerPort": 5432}],
                                "envFrom": [{"secretRef": {"name": f"{db}-creds"}}],
                                "env": [{"name": "PGDATA", "value": "/var/lib/postgresql/data/pg"}],
                                "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}},
                                "volumeMounts": [
                                    {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                                    {"name": "config", "mountPath": "/etc/postgresql"},
                                ],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": f"{db}-config"}}],
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}},
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": db, "labels": dict(db_labels)},
            "spec": {
                "clusterIP": "None",
                "selector": {"app.kubernetes.io/name": db},
                "ports": [{"name": "pg", "port": 5432, "targetPort": "pg"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{db}-config", "labels": dict(db_labels)},
            "data": {
                "postgresql.conf": "max_connections = 200\nshared_buffers = 256MB\n"
                "work_mem = 4MB\nlog_min_duration_statement = 500\n",
            },
        },
        _secret(f"{db}-creds", db_labels, u + 1, string_data=False),
    ]


def _secret(name: str, labels: dict[str, str], u: int, *, string_data: bool) -> dict[str, Any]:
    values = {"username": f"user{u:04d}", "password": f"bench-not-a-secret-{u:04d}"}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": dict(labels)},
        "type": "Opaque",
    }
    if string_data:
        body["stringData"] = values
    else:
        body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return body


def overlay_kustomization(app: str, units: int) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": app,
        "resources": ["../../base"],
        "labels": [
            {
                "pairs": {"app.kubernetes.io/part-of": app, "env": "prod"},
                "includeSelectors": False,
            }
        ],
        "images": [{"name": f"{REGISTRY}/web", "newTag": "1.5.0"}],
        "replicas": [{"name": f"web-{u:04d}", "count": 3} for u in range(0, units, 7)],
    }


def render_overlay(app: str, units: int) -> list[dict[str, Any]]:
    """What `kubectl kustomize apps/<app>/overlays/prod` prints, computed in Python (checked
    against kustomize by --verify)."""
    scale = {f"web-{u:04d}": 3 for u in range(0, units, 7)}
    out = []
    for u in range(units):
        for body in base_unit(u):
            md = body["metadata"]
            md["namespace"] = app
            md["labels"] = {**md.get("labels", {}), "app.kubernetes.io/part-of": app, "env": "prod"}
            if body["kind"] in ("Deployment", "StatefulSet"):
                if md["name"] in scale:
                    body["spec"]["replicas"] = scale[md["name"]]
                for c in body["spec"]["template"]["spec"]["containers"]:
                    if c["image"].startswith(f"{REGISTRY}/web:"):
                        c["image"] = f"{REGISTRY}/web:1.5.0"
            out.append(body)
    return out


def write_tree(scenario: Scenario, tree: Path) -> None:
    for app in _app_names(scenario):
        base = tree / "apps" / app / "base"
        overlay = tree / "apps" / app / "overlays" / "prod"
        base.mkdir(parents=True)
        overlay.mkdir(parents=True)
        files = []
        for u in range(scenario.units):
            name = f"unit-{u:04d}.yaml"
            files.append(name)
            (base / name).write_text(dump_yaml_all(base_unit(u)), encoding="utf-8")
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": files,
        }
        (base / "kustomization.yaml").write_text(
            yaml.dump(kustomization, Dumper=_Dumper, sort_keys=False), encoding="utf-8"
        )
        (overlay / "kustomization.yaml").write_text(
            yaml.dump(overlay_kustomization(app, scenario.units), Dumper=_Dumper, sort_keys=False),
            encoding="utf-8",
        )
    (tree / "README.md").write_text(f"Benchmark fleet {scenario.name}\n", encoding="utf-8")


# --------------------------------------------------------------------------- live side

_MAP_FIELDS = frozenset(
    {"labels", "annotations", "data", "matchLabels", "requests", "limits", "nodeSelector"}
)
_POINTER_STRUCTS = frozenset(
    {
        "rollingUpdate", "readinessProbe", "httpGet", "configMap", "valueFrom", "secretKeyRef",
        "secretRef", "persistentVolumeClaimRetentionPolicy", "updateStrategy",
    }
)  # fmt: skip
_ATOMIC = frozenset(
    {"selector", "volumeClaimTemplates", "rules", "subjects", "roleRef", "args", "command"}
)
_LIST_KEYS: dict[str, tuple[str, ...] | None] = {
    "containers": ("name",),
    "env": ("name",),
    "volumeMounts": ("mountPath",),
    "volumes": ("name",),
    "conditions": ("type",),
    "envFrom": None,  # atomic
}


def fields_v1(value: Any, name: str = "", *, kind: str = "") -> dict[str, Any]:
    """A FieldsV1 trie owning every field of `value` (what an Update by one manager records)."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    if name in _MAP_FIELDS or name in _POINTER_STRUCTS:
        out["."] = {}
    for key, sub in value.items():
        field = f"f:{key}"
        if key in _ATOMIC and not (key == "selector" and kind == "Service" and name == "spec"):
            out[field] = {}
        elif isinstance(sub, list):
            keys: tuple[str, ...] | None = _LIST_KEYS.get(key, ())
            if key == "ports":
                keys = ("port", "protocol") if kind == "Service" else ("containerPort", "protocol")
            if not keys or not all(isinstance(i, dict) for i in sub):
                out[field] = {}
                continue
            items: dict[str, Any] = {".": {}}
            for item in sub:
                ident = json.dumps({k: item.get(k) for k in keys}, separators=(",", ":"))
                items[f"k:{ident}"] = {".": {}, **fields_v1(item, kind=kind)}
            out[field] = items
        elif isinstance(sub, dict):
            out[field] = fields_v1(sub, key, kind=kind)
        else:
            out[field] = {}
    return out


def _entry(manager: str, api_version: str, trie: dict[str, Any], **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "apiVersion": api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": trie,
        "manager": manager,
        "operation": "Update",
    }
    if extra.get("subresource"):
        entry["subresource"] = extra["subresource"]
    if extra.get("time"):
        entry["time"] = extra["time"]
    return entry


def _container_defaults(c: dict[str, Any]) -> None:
    c.setdefault("imagePullPolicy", "IfNotPresent")
    for p in c.get("ports", []):
        p.setdefault("protocol", "TCP")
    c.setdefault("resources", {})
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    probe = c.get("readinessProbe")
    if probe:
        probe.setdefault("failureThreshold", 3)
        probe.setdefault("successThreshold", 1)
        probe.setdefault("timeoutSeconds", 1)
        if "httpGet" in probe:
            probe["httpGet"].setdefault("scheme", "HTTP")


def _pod_defaults(template: dict[str, Any]) -> None:
    template.setdefault("metadata", {})["creationTimestamp"] = None
    spec = template["spec"]
    for c in spec["containers"]:
        _container_defaults(c)
    for v in spec.get("volumes", []):
        if "configMap" in v:
            v["configMap"].setdefault("defaultMode", 420)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)


class Cluster:
    """Makes live objects as the API server stores them; seeded for uids, IPs and hashes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rv = 1000

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def pod_hash(self) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(10))

    def live(self, desired: dict[str, Any], app: str, created: str) -> dict[str, Any]:
        """`desired` after Argo CD's client-side apply, server defaulting and controllers."""
        applied = copy.deepcopy(desired)
        md = applied["metadata"]
        group = applied["apiVersion"].rpartition("/")[0]
        tracking = f"{app}:{group}/{applied['kind']}:{md['namespace']}/{md['name']}"
        md["annotations"] = {
            **md.get("annotations", {}),
            "argocd.argoproj.io/tracking-id": tracking,
        }
        last_applied = json.dumps(applied, sort_keys=True, separators=(",", ":")) + "\n"

        live = copy.deepcopy(applied)
        kind = live["kind"]
        md = live["metadata"]
        md["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = last_applied
        if kind == "Secret" and "stringData" in live:
            string_data = live.pop("stringData")
            live["data"] = {
                k: base64.b64encode(v.encode()).decode() for k, v in string_data.items()
            }
        status: dict[str, Any] | None = None
        if kind == "Deployment":
            spec = live["spec"]
            spec.setdefault("progressDeadlineSeconds", 600)
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault(
                "strategy",
                {
                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                    "type": "RollingUpdate",
                },
            )
            _pod_defaults(spec["template"])
            md["generation"] = 1
            n = spec["replicas"]
            status = {
                "availableReplicas": n,
                "conditions": [
                    _condition(
                        "Available",
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability.",
                    ),
                    _condition(
                        "Progressing",
                        "NewReplicaSetAvailable",
                        f'ReplicaSet "{md["name"]}-{self.pod_hash()}" has successfully progressed.',
                    ),
                ],
                "observedGeneration": 1,
                "readyReplicas": n,
                "replicas": n,
                "updatedReplicas": n,
            }
            md["annotations"]["deployment.kubernetes.io/revision"] = "1"
        elif kind == "StatefulSet":
            spec = live["spec"]
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault(
                "persistentVolumeClaimRetentionPolicy",
                {"whenDeleted": "Retain", "whenScaled": "Retain"},
            )
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault(
                "updateStrategy", {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}
            )
            _pod_defaults(spec["template"])
            for claim in spec.get("volumeClaimTemplates", []):
                claim["apiVersion"] = "v1"
                claim["kind"] = "PersistentVolumeClaim"
                claim["metadata"]["creationTimestamp"] = None
                claim["spec"].setdefault("volumeMode", "Filesystem")
                claim["status"] = {"phase": "Pending"}
            md["generation"] = 1
            n = spec["replicas"]
            rev = f"{md['name']}-{self.pod_hash()}"
            status = {
                "availableReplicas": n,
                "collisionCount": 0,
                "currentReplicas": n,
                "currentRevision": rev,
                "observedGeneration": 1,
                "readyReplicas": n,
                "replicas": n,
                "updateRevision": rev,
                "updatedReplicas": n,
            }
        elif kind == "Service":
            spec = live["spec"]
            ip = "None" if spec.get("clusterIP") == "None" else self._ip()
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
            spec.setdefault("internalTrafficPolicy", "Cluster")
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            for p in spec["ports"]:
                p.setdefault("protocol", "TCP")
                p.setdefault("targetPort", p["port"])
            spec.setdefault("sessionAffinity", "None")
            spec.setdefault("type", "ClusterIP")
            live["status"] = {"loadBalancer": {}}

        owned = {k: v for k, v in live.items() if k not in ("apiVersion", "kind", "status")}
        owned["metadata"] = {"annotations": md["annotations"], "labels": md["labels"]}
        owned["metadata"]["annotations"] = {
            k: v for k, v in md["annotations"].items() if not k.startswith("deployment.kubernetes")
        }
        managed = [
            _entry(
                "argocd-controller", live["apiVersion"], fields_v1(owned, kind=kind), time=created
            )
        ]
        if status is not None:
            status_owned: dict[str, Any] = {"status": status}
            if kind == "Deployment":
                status_owned["metadata"] = {
                    "annotations": {"deployment.kubernetes.io/revision": "1"}
                }
            trie = fields_v1(status_owned, kind=kind)
            managed.append(
                _entry(
                    "kube-controller-manager",
                    live["apiVersion"],
                    trie,
                    subresource="status",
                    time=STATUS_TIME,
                )
            )
            live["status"] = status
        md["creationTimestamp"] = created
        md["managedFields"] = managed
        md["resourceVersion"] = self.next_rv()
        md["uid"] = self.uid()
        ordered: dict[str, Any] = _ordered(live)
        return ordered

    def _ip(self) -> str:
        return f"10.96.{self.rng.randrange(0, 256)}.{self.rng.randrange(1, 255)}"

    def replica_set(self, deployment: dict[str, Any]) -> dict[str, Any]:
        """The Deployment's ReplicaSet: untracked noise (ownerReferences; copied tracking-id)."""
        md = deployment["metadata"]
        h = self.pod_hash()
        labels = {**deployment["spec"]["template"]["metadata"]["labels"], "pod-template-hash": h}
        n = deployment["spec"]["replicas"]
        template = copy.deepcopy(deployment["spec"]["template"])
        template["metadata"]["labels"] = labels
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "annotations": {
                    "argocd.argoproj.io/tracking-id": md["annotations"][
                        "argocd.argoproj.io/tracking-id"
                    ],
                    "deployment.kubernetes.io/desired-replicas": str(n),
                    "deployment.kubernetes.io/max-replicas": str(n + 1),
                    "deployment.kubernetes.io/revision": "1",
                },
                "creationTimestamp": md["creationTimestamp"],
                "generation": 1,
                "labels": labels,
                "managedFields": [
                    _entry(
                        "kube-controller-manager",
                        "apps/v1",
                        fields_v1({"spec": {"replicas": n, "template": template}}),
                        time=STATUS_TIME,
                    )
                ],
                "name": f"{md['name']}-{h}",
                "namespace": md["namespace"],
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "blockOwnerDeletion": True,
                        "controller": True,
                        "kind": "Deployment",
                        "name": md["name"],
                        "uid": md["uid"],
                    }
                ],
                "resourceVersion": self.next_rv(),
                "uid": self.uid(),
            },
            "spec": {
                "replicas": n,
                "selector": {
                    "matchLabels": {
                        **deployment["spec"]["selector"]["matchLabels"],
                        "pod-template-hash": h,
                    }
                },
                "template": template,
            },
            "status": {
                "availableReplicas": n,
                "fullyLabeledReplicas": n,
                "observedGeneration": 1,
                "readyReplicas": n,
                "replicas": n,
            },
        }

    def root_ca(self, namespace: str) -> dict[str, Any]:
        cert = base64.b64encode(hashlib.sha512(namespace.encode()).digest() * 12).decode()
        data = {"ca.crt": "-----BEGIN CERTIFICATE-----\n" + cert + "\n-----END CERTIFICATE-----\n"}
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": data,
            "metadata": {
                "annotations": {"kubernetes.io/description": "Contains a CA bundle."},
                "creationTimestamp": "2026-11-23T08:50:00Z",
                "managedFields": [
                    _entry(
                        "kube-controller-manager",
                        "v1",
                        fields_v1({"data": data}),
                        time="2026-11-23T08:50:00Z",
                    )
                ],
                "name": "kube-root-ca.crt",
                "namespace": namespace,
                "resourceVersion": self.next_rv(),
                "uid": self.uid(),
            },
        }


def _condition(kind: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "lastTransitionTime": SYNC_TIME,
        "lastUpdateTime": STATUS_TIME,
        "message": message,
        "reason": reason,
        "status": "True",
        "type": kind,
    }


def _ordered(body: Any) -> Any:
    """Keys sorted, like `kubectl get -o yaml` prints them."""
    if isinstance(body, dict):
        return {k: _ordered(body[k]) for k in sorted(body)}
    if isinstance(body, list):
        return [_ordered(v) for v in body]
    return body


# --------------------------------------------------------------------------- drift


def _drop(trie: dict[str, Any], path: list[str]) -> None:
    node: dict[str, Any] | None = trie
    for key in path[:-1]:
        node = node.get(key) if node is not None else None
    if node is not None:
        node.pop(path[-1], None)


def _argocd(live: dict[str, Any]) -> dict[str, Any]:
    for entry in live["metadata"]["managedFields"]:
        if entry["manager"] == "argocd-controller":
            trie: dict[str, Any] = entry["fieldsV1"]
            return trie
    raise ValueError("no argocd-controller entry")


def drift(live: dict[str, Any], how: str) -> dict[str, Any]:
    """Apply one manual change the way the API server records it; return what changed."""
    md = live["metadata"]
    container_key = ""
    if live["kind"] in ("Deployment", "StatefulSet"):
        container = live["spec"]["template"]["spec"]["containers"][0]
        container_key = "k:" + json.dumps({"name": container["name"]}, separators=(",", ":"))
    if how == "scale":
        before = live["spec"]["replicas"]
        after = before * 2
        live["spec"]["replicas"] = after
        live["status"]["replicas"] = after
        md["managedFields"].insert(
            0,
            _entry(
                "kubectl", live["apiVersion"], {"f:spec": {"f:replicas": {}}}, subresource="scale"
            ),
        )
        _drop(_argocd(live), ["f:spec", "f:replicas"])
        path, manager = "spec.replicas", "kubectl"
    elif how == "edit":  # kubectl edit: more memory (a field git sets; an edit of a field git
        # never set, e.g. imagePullPolicy, is not drift for Argo CD's three-way comparison)
        limits = container["resources"]["limits"]
        before = limits["memory"]
        after = limits["memory"] = "512Mi"
        owned: dict[str, Any] = {
            "f:containers": {container_key: {"f:resources": {"f:limits": {"f:memory": {}}}}}
        }
        md["managedFields"].append(
            _entry(
                "kubectl-edit",
                live["apiVersion"],
                {"f:spec": {"f:template": {"f:spec": owned}}},
                time=EDIT_TIME,
            )
        )
        _drop(
            _argocd(live),
            [
                "f:spec",
                "f:template",
                "f:spec",
                "f:containers",
                container_key,
                "f:resources",
                "f:limits",
                "f:memory",
            ],
        )
        path = f"spec.template.spec.containers[name={container['name']}].resources.limits.memory"
        manager = "kubectl-edit"
    elif how == "set-image":
        before = container["image"]
        after = container["image"] = before.rpartition(":")[0] + ":1.5.1-hotfix"
        owned = {"f:containers": {container_key: {"f:image": {}}}}
        md["managedFields"].append(
            _entry(
                "kubectl-set",
                live["apiVersion"],
                {"f:spec": {"f:template": {"f:spec": owned}}},
                time=EDIT_TIME,
            )
        )
        _drop(
            _argocd(live),
            ["f:spec", "f:template", "f:spec", "f:containers", container_key, "f:image"],
        )
        path, manager = (
            f"spec.template.spec.containers[name={container['name']}].image",
            "kubectl-set",
        )
    elif how == "cm-edit":
        key = min(live["data"])
        before = live["data"][key]
        after = live["data"][key] = before + "\n# tuned by hand\n" if "\n" in before else "debug"
        md["managedFields"].append(
            _entry("kubectl-edit", "v1", {"f:data": {f"f:{key}": {}}}, time=EDIT_TIME)
        )
        _drop(_argocd(live), ["f:data", f"f:{key}"])
        path, manager = f"data.{key}" if "." not in key else f'data["{key}"]', "kubectl-edit"
    else:
        raise ValueError(how)
    if "generation" in md and how != "cm-edit":
        md["generation"] += 1
        live["status"]["observedGeneration"] = md["generation"]
    md["resourceVersion"] = str(int(md["resourceVersion"]) + 100000)
    return {"how": how, "path": path, "manager": manager, "desired": before, "live": after}


_DRIFTS = {
    "Deployment": ("scale", "edit", "set-image"),
    "StatefulSet": ("scale",),
    "ConfigMap": ("cm-edit",),
}


# --------------------------------------------------------------------------- Applications


def application(
    app: str, sha: str, rv: str, uid: str, resources: list[dict[str, Any]], index: int
) -> dict[str, Any]:
    source = {"path": f"apps/{app}/overlays/prod", "repoURL": REPO_URL, "targetRevision": "main"}
    destination = {"namespace": app, "server": "https://kubernetes.default.svc"}
    automated = index % 5 != 4  # one app in five syncs by hand
    policy: dict[str, Any] = {"syncOptions": ["CreateNamespace=true"]}
    if automated:
        policy["automated"] = {"prune": True, "selfHeal": False}
    spec = {
        "destination": destination,
        "project": "default",
        "source": source,
        "syncPolicy": policy,
    }
    applied = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"annotations": {}, "name": app, "namespace": "argocd"},
        "spec": spec,
    }
    out_of_sync = any(r["status"] == "OutOfSync" for r in resources)
    prior = "0" * 40
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
                    applied, sort_keys=True, separators=(",", ":")
                )
                + "\n"
            },
            "creationTimestamp": "2026-11-23T09:04:11Z",
            "generation": 9,
            "managedFields": [
                _entry(
                    "kubectl-client-side-apply",
                    "argoproj.io/v1alpha1",
                    fields_v1({"spec": spec}),
                    time="2026-11-23T09:04:11Z",
                ),
                _entry(
                    "argocd-application-controller",
                    "argoproj.io/v1alpha1",
                    {
                        "f:status": {
                            ".": {},
                            "f:history": {},
                            "f:resources": {},
                            "f:sync": {".": {}, "f:revision": {}, "f:status": {}},
                        }
                    },
                    time="2026-11-30T06:14:34Z",
                ),
            ],
            "name": app,
            "namespace": "argocd",
            "resourceVersion": rv,
            "uid": uid,
        },
        "spec": spec,
        "status": {
            "controllerNamespace": "argocd",
            "health": {"lastTransitionTime": SYNC_TIME, "status": "Healthy"},
            "history": [
                {
                    "deployStartedAt": "2026-11-23T09:04:12Z",
                    "deployedAt": "2026-11-23T09:04:13Z",
                    "id": 0,
                    "initiatedBy": {"automated": True},
                    "revision": prior,
                    "source": source,
                },
                {
                    "deployStartedAt": SYNC_TIME,
                    "deployedAt": SYNC_TIME,
                    "id": 1,
                    "initiatedBy": {"automated": True} if automated else {"username": "admin"},
                    "revision": sha,
                    "source": source,
                },
            ],
            "operationState": {
                "finishedAt": SYNC_TIME,
                "message": "successfully synced (all tasks run)",
                "operation": {
                    "initiatedBy": {"automated": True},
                    "retry": {"limit": 5},
                    "sync": {"prune": True, "revision": sha, "syncStrategy": {"hook": {}}},
                },
                "phase": "Succeeded",
                "startedAt": SYNC_TIME,
                "syncResult": {"revision": sha, "source": source},
            },
            "reconciledAt": "2026-11-30T06:14:34Z",
            "resources": resources,
            "sourceType": "Kustomize",
            "summary": {"images": ["docker.io/library/postgres:16.4", f"{REGISTRY}/web:1.5.0"]},
            "sync": {
                "comparedTo": {"destination": destination, "source": source},
                "revision": sha,
                "status": "OutOfSync" if out_of_sync else "Synced",
            },
        },
    }


def argocd_cm() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {
            "application.resourceTrackingMethod": "annotation",
            "timeout.reconciliation": "180s",
        },
        "metadata": {
            "creationTimestamp": "2026-11-23T08:51:20Z",
            "labels": {
                "app.kubernetes.io/name": "argocd-cm",
                "app.kubernetes.io/part-of": "argocd",
            },
            "name": "argocd-cm",
            "namespace": "argocd",
            "resourceVersion": "214",
            "uid": "3f9d2c71-8b4e-4a06-b5d3-6e1f0a9c2b85",
        },
    }


# --------------------------------------------------------------------------- the whole fleet


def generate(scenario: Scenario, out: Path, *, check: bool = False) -> dict[str, Any]:
    """Write OUT/repo (git), OUT/snapshot.yaml (+ .json, same objects) and OUT/meta.json; return
    the meta."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-src-") as tmp:
        src = Path(tmp)
        write_tree(scenario, src / "01-fleet")
        (src / "commits.yaml").write_text(
            yaml.safe_dump(
                [
                    {
                        "dir": "01-fleet",
                        "message": f"bench: {scenario.name}",
                        "author": "Bench Generator <bench@example.com>",
                        "date": COMMIT_DATE,
                    }
                ]
            ),
            encoding="utf-8",
        )
        sha = _build_repo(src, out / "repo")[-1]

    rng = random.Random(f"{scenario.seed}/{scenario.name}")
    cluster = Cluster(rng)
    items: list[dict[str, Any]] = [argocd_cm()]
    drifted: list[dict[str, Any]] = []
    apps = []
    tracked = 0
    for index, app in enumerate(_app_names(scenario)):
        live_objs: list[dict[str, Any]] = [cluster.root_ca(app)]
        resources = []
        for n, desired in enumerate(render_overlay(app, scenario.units)):
            created = f"2026-11-30T04:{1 + n // 60 % 58:02d}:{n % 60:02d}Z"
            live = cluster.live(desired, app, created)
            tracked += 1
            kinds = _DRIFTS.get(live["kind"], ())
            per_object = scenario.drift * UNIT_OBJECTS / 4  # 4 of a unit's 10 objects can drift
            status = "Synced"
            if kinds and rng.random() < per_object:
                change = drift(live, rng.choice(kinds))
                group = live["apiVersion"].rpartition("/")[0]
                md = live["metadata"]
                drifted.append(
                    {
                        "app": app,
                        "group": group,
                        "kind": live["kind"],
                        "namespace": md["namespace"],
                        "name": md["name"],
                        **change,
                    }
                )
                status = "OutOfSync"
            live_objs.append(live)
            if live["kind"] == "Deployment":
                live_objs.append(cluster.replica_set(live))
            group = live["apiVersion"].rpartition("/")[0]
            entry = {
                "kind": live["kind"],
                "name": live["metadata"]["name"],
                "namespace": app,
                "status": status,
                "version": live["apiVersion"].rpartition("/")[2],
            }
            if group:
                entry["group"] = group
            if live["kind"] in ("Deployment", "StatefulSet", "Service"):
                entry["health"] = {"status": "Healthy"}
            resources.append(entry)
        items.append(application(app, sha, cluster.next_rv(), cluster.uid(), resources, index))
        items.extend(live_objs)
        apps.append(app)
    snapshot = {
        "apiVersion": "v1",
        "items": items,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    text = dump_yaml(snapshot)
    if check and yaml.load(text, Loader=yaml.CSafeLoader) != snapshot:
        raise AssertionError("the snapshot YAML does not load back to the generated objects")
    (out / "snapshot.yaml").write_text(text, encoding="utf-8")
    # the same objects as JSON (what `kubectl gitdrift snapshot -o x.json` is for: it loads ~30x
    # faster); written here because converting the YAML later costs a YAML load of it
    (out / "snapshot.json").write_text(
        "".join(json.dumps(item) + "\n" for item in items), encoding="utf-8"
    )
    meta = {
        "scenario": asdict(scenario),
        "generator": GENERATOR_VERSION,
        "revision": sha,
        "apps": apps,
        "tracked_objects": tracked,
        "snapshot_objects": len(items),
        "drifted": drifted,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def fingerprint(scenario: Scenario) -> str:
    """Changes when the scenario or this generator's code changes (cache key for fixtures)."""
    text = json.dumps(asdict(scenario), sort_keys=True) + Path(__file__).read_text(encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure(scenario: Scenario, root: Path) -> tuple[Path, dict[str, Any]]:
    """The scenario's fixture under `root`, generated unless an identical one is there."""
    out = root / scenario.name
    stamp = out / ".fingerprint"
    fp = fingerprint(scenario)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == fp:
        return out, json.loads((out / "meta.json").read_text(encoding="utf-8"))
    meta = generate(scenario, out)
    stamp.write_text(fp, encoding="utf-8")
    return out, meta


def verify(out: Path, meta: dict[str, Any], count: int) -> int:
    """Compare render_overlay with `kubectl kustomize` on the first `count` apps."""
    from kubectl_gitdrift.sources import tools  # the same binary lookup gitdrift uses

    units = meta["scenario"]["units"]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-verify-") as tmp:
        subprocess.run(["git", "clone", "-q", str(out / "repo"), tmp + "/wt"], check=True)
        for app in meta["apps"][:count]:
            cmd = [*tools.kustomize_command(), f"{tmp}/wt/apps/{app}/overlays/prod"]
            rendered = list(
                yaml.safe_load_all(subprocess.run(cmd, check=True, capture_output=True).stdout)
            )
            ours = render_overlay(app, units)

            def key(b: dict[str, Any]) -> tuple[str, str]:
                return (b["kind"], b["metadata"]["name"])

            if sorted(rendered, key=key) != sorted(ours, key=key):
                bad += 1
                theirs = {key(b): b for b in rendered}
                for body in ours:
                    if theirs.get(key(body)) != body:
                        print(f"{app}: {key(body)} differs:")
                        print(f"  kustomize: {theirs.get(key(body))}\n  ours:      {body}")
                        break
            else:
                print(f"{app}: {len(ours)} objects identical to kustomize")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", choices=sorted(SCENARIOS))
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--verify", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    if args.list or not args.scenario or not args.out:
        for s in SCENARIOS.values():
            print(f"{s.name:15} {s.apps:4} app(s) x {s.units * UNIT_OBJECTS:5} objects  {s.doc}")
        return 0
    meta = generate(SCENARIOS[args.scenario], args.out, check=bool(args.verify))
    print(
        f"{args.out}: {len(meta['apps'])} app(s), {meta['tracked_objects']} tracked objects, "
        f"{meta['snapshot_objects']} snapshot objects, {len(meta['drifted'])} drifted, "
        f"revision {meta['revision']}"
    )
    if args.verify:
        return 1 if verify(args.out, meta, args.verify) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
