"""cert-manager's CA injector owns `caBundle`: ignore it where the object asks for injection.

Load it with `kubectl gitdrift APP --plugin plugins/cabundle.py`.

cert-manager's cainjector writes the CA into `caBundle` of every object annotated with
`cert-manager.io/inject-ca-from` (a Certificate), `cert-manager.io/inject-ca-from-secret` (a
Secret) or `cert-manager.io/inject-apiserver-ca`. Git carries no CA or a placeholder, so the field
differs forever. For each annotated *live* object this plugin adds one ignore rule,
`cabundle/<kind>/<name>`:

- Mutating/ValidatingWebhookConfiguration: `.webhooks[]?.clientConfig.caBundle`
- CustomResourceDefinition: `.spec.conversion.webhook.clientConfig.caBundle`
- APIService: `/spec/caBundle`

Objects without the annotation keep their caBundle compared: a CA nobody injects is drift.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_gitdrift import Application, IgnoreRule, Manifest, hookimpl

__version__ = "1.0.0"

PLUGIN = "cabundle"
ANNOTATIONS = (
    "cert-manager.io/inject-ca-from",
    "cert-manager.io/inject-ca-from-secret",
    "cert-manager.io/inject-apiserver-ca",
)
WEBHOOKS = ".webhooks[]?.clientConfig.caBundle"
FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    # (group, kind): (json pointers, jq path expressions)
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ((), (WEBHOOKS,)),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ((), (WEBHOOKS,)),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        (),
        (".spec.conversion.webhook.clientConfig.caBundle",),
    ),
    ("apiregistration.k8s.io", "APIService"): (("/spec/caBundle",), ()),
}


def injected(annotations: object) -> bool:
    if not isinstance(annotations, dict):
        return False
    return any(str(annotations.get(name) or "").strip() for name in ANNOTATIONS)


@hookimpl
def gitdrift_ignore_rules(app: Application, live: Sequence[Manifest]) -> list[IgnoreRule]:
    rules = []
    for manifest in sorted(live, key=lambda m: m.key):
        fields = FIELDS.get((manifest.key.group, manifest.key.kind))
        if fields is None:
            continue
        if not injected((manifest.body.get("metadata") or {}).get("annotations")):
            continue
        pointers, jq_paths = fields
        rules.append(
            IgnoreRule(
                group=manifest.key.group,
                kind=manifest.key.kind,
                name=manifest.key.name,
                namespace=manifest.key.namespace,
                json_pointers=pointers,
                jq_paths=jq_paths,
                rule_id=f"{PLUGIN}/{manifest.key.kind}/{manifest.key.name}",
            )
        )
    return rules
