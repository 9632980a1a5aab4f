{{/* The release's object name: the release name if it contains "volsched", else <release>-volsched. */}}
{{- define "volsched.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "volsched.configMapName" -}}
{{- printf "%s-scheduler-config" (include "volsched.fullname" .) -}}
{{- end -}}

{{/* Labels on every object's metadata (the pod selector stays app.kubernetes.io/name only, as in manifests/). */}}
{{- define "volsched.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The scheduler names the operator answers to, comma-separated (VOLSCHED_SCHEDULER_NAMES). */}}
{{- define "volsched.schedulerNames" -}}
{{- $names := .Values.schedulerNames | default (list "volsched") -}}
{{- join "," $names -}}
{{- end -}}
