// Not a function: the TLAs are ignored here, as go-jsonnet ignores them for plain values.
local k8s = import 'k8s.libsonnet';
k8s.configMap('metrics-dashboards', { folder: 'Platform', refresh: '1m', cluster: std.extVar('cluster') })
