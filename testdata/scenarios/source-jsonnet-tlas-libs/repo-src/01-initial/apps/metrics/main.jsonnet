// Top-level arguments come from the Application's directory.jsonnet.tlas; `replicas` is code.
local k8s = import 'k8s.libsonnet';
local settings = import 'settings.libsonnet';  // next to this file: the app directory is a JPath

function(replicas, tier='bronze', alerts={ cpu: 80 }) [
  k8s.configMap('metrics-settings', settings {
    replicas: replicas,
    replicasTimesTwo: replicas * 2,
    tier: tier,
    cluster: std.extVar('cluster'),
    app: std.extVar('app'),
  }),
  k8s.configMap('metrics-alerts', alerts, { tier: tier }),
]
