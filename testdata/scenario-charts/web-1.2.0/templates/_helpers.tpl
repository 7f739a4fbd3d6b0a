{{- define "web.labels" -}}
app.kubernetes.io/name: web
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: web-{{ .Chart.Version }}
{{- end }}
