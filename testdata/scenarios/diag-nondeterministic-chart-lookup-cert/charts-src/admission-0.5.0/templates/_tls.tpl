{{/*
A self-signed serving certificate; the one already in the cluster is kept when lookup finds it.
*/}}
{{- define "admission.tls" -}}
{{- $name := printf "%s-tls" .Release.Name -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name -}}
{{- if $existing -}}
tls.crt: {{ index $existing.data "tls.crt" }}
tls.key: {{ index $existing.data "tls.key" }}
{{- else -}}
{{- $cn := printf "%s.%s.svc" .Release.Name .Release.Namespace -}}
{{- $cert := genSelfSignedCert $cn nil (list $cn) (int .Values.tls.validityDays) -}}
tls.crt: {{ $cert.Cert | b64enc }}
tls.key: {{ $cert.Key | b64enc }}
{{- end -}}
{{- end -}}
