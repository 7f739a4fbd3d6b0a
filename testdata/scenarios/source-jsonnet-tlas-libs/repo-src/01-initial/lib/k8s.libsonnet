// Shared helpers, found through directory.jsonnet.libs: [lib] (relative to the repository root).
{
  configMap(name, data, labels={}):: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: name, labels: { 'app.kubernetes.io/part-of': 'metrics' } + labels },
    data: { [k]: std.toString(data[k]) for k in std.objectFields(data) },
  },
}
