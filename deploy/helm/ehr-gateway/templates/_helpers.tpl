{{/* Names and labels of ehr-gateway's objects. */}}
{{- define "ehr-gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ehr-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ehr-gateway.labels" -}}
{{ include "ehr-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ehr-gateway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The environment of every container: the chart's ports and addresses, the plain settings, the Secret's keys. */}}
{{- define "ehr-gateway.env" -}}
{{- $root := index . 0 -}}
{{- $role := index . 1 -}}
- name: PORT
  value: {{ $root.Values.ports.public | quote }}
- name: INTERNAL_PORT
  value: {{ $root.Values.ports.internal | quote }}
- name: HEALTH_PORT
  value: {{ $root.Values.ports.health | quote }}
- name: HOST
  value: "0.0.0.0"
# The pod's network is the boundary here: the NetworkPolicy admits only the authorization server and Prometheus to this port.
- name: INTERNAL_HOST
  value: "0.0.0.0"
{{- range $name, $value := $root.Values.config }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- if $role }}
{{- range $name, $value := (index $root.Values.roles $role).env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef: { name: {{ $root.Values.secret.name }}, key: DATABASE_URL }
- name: DATA_KEY
  valueFrom:
    secretKeyRef: { name: {{ $root.Values.secret.name }}, key: DATA_KEY }
- name: DATA_KEY_PREVIOUS
  valueFrom:
    secretKeyRef: { name: {{ $root.Values.secret.name }}, key: DATA_KEY_PREVIOUS, optional: true }
{{- if eq $role "ehr" }}
- name: INTERNAL_USERS
  valueFrom:
    secretKeyRef: { name: {{ $root.Values.secret.name }}, key: INTERNAL_USERS }
{{- end }}
{{- end -}}

{{- define "ehr-gateway.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "ehr-gateway.podSecurityContext" -}}
runAsNonRoot: true
# The image's unprivileged user node.
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* A NetworkPolicy peer of networkPolicy.*: its pods, in this namespace or in those its namespaceSelector names. */}}
{{- define "ehr-gateway.peer" -}}
- podSelector:
    {{- toYaml .podSelector | nindent 4 }}
  {{- with .namespaceSelector }}
  namespaceSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
