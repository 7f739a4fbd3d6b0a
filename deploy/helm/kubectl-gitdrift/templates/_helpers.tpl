{{- define "gitdrift.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gitdrift.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gitdrift.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gitdrift.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gitdrift.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The flags every run takes: which apps, the controller's service account, extra flags. */}}
{{- define "gitdrift.args" -}}
- --all
{{- if .Values.argocd.allNamespaces }}
- --all-namespaces
{{- else }}
- --app-namespace={{ .Values.argocd.namespace }}
{{- end }}
- --controller-sa={{ .Values.argocd.controllerServiceAccount }}
- --progress=never
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Environment, volumes and mounts shared by the CronJob's and the Deployment's pods. */}}
{{- define "gitdrift.env" -}}
- name: KUBECTL_GITDRIFT_CACHE_DIR
  value: /var/cache/gitdrift
- name: HOME
  value: /tmp/home
- name: GIT_TERMINAL_PROMPT
  value: "0"
{{- if .Values.git.config }}
- name: GIT_CONFIG_GLOBAL
  value: /etc/gitdrift/gitconfig/gitconfig
{{- end }}
{{- if .Values.git.sshSecret }}
- name: GIT_SSH_COMMAND
  value: ssh -i /etc/gitdrift/ssh/ssh-privatekey -o IdentitiesOnly=yes -o UserKnownHostsFile=/etc/gitdrift/ssh/known_hosts
{{- end }}
{{- if .Values.git.credentialsSecret }}
- name: GIT_CONFIG_COUNT
  value: "1"
- name: GIT_CONFIG_KEY_0
  value: credential.helper
- name: GIT_CONFIG_VALUE_0
  value: store --file=/etc/gitdrift/git-credentials/.git-credentials
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "gitdrift.mounts" -}}
- name: cache
  mountPath: /var/cache/gitdrift
- name: tmp
  mountPath: /tmp
{{- if .Values.git.config }}
- name: gitconfig
  mountPath: /etc/gitdrift/gitconfig
  readOnly: true
{{- end }}
{{- if .Values.git.sshSecret }}
- name: ssh
  mountPath: /etc/gitdrift/ssh
  readOnly: true
{{- end }}
{{- if .Values.git.credentialsSecret }}
- name: git-credentials
  mountPath: /etc/gitdrift/git-credentials
  readOnly: true
{{- end }}
{{- end -}}

{{- define "gitdrift.volumes" -}}
- name: cache
  emptyDir:
    sizeLimit: {{ .Values.cache.sizeLimit }}
- name: tmp
  emptyDir: {}
{{- if .Values.git.config }}
- name: gitconfig
  configMap:
    name: {{ include "gitdrift.fullname" . }}-gitconfig
{{- end }}
{{- if .Values.git.sshSecret }}
- name: ssh
  secret:
    secretName: {{ .Values.git.sshSecret }}
    defaultMode: 0400
{{- end }}
{{- if .Values.git.credentialsSecret }}
- name: git-credentials
  secret:
    secretName: {{ .Values.git.credentialsSecret }}
    defaultMode: 0400
{{- end }}
{{- end -}}

{{- define "gitdrift.podSpec" -}}
serviceAccountName: {{ include "gitdrift.serviceAccountName" . }}
automountServiceAccountToken: true
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "gitdrift.volumes" . | nindent 2 }}
{{- end -}}

{{- define "gitdrift.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
