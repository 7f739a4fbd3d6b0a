// a missing closing brace
function(replicas=1) { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config' }
