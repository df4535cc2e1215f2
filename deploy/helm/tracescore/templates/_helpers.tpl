{{/* Names, labels and the image reference shared by the templates. */}}

{{- define "tracescore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tracescore.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service: stable pod names for the StatefulSet, and what the loadbalancing exporter's
k8s or dns resolver watches. */}}
{{- define "tracescore.headless" -}}
{{- printf "%s-headless" (include "tracescore.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tracescore.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tracescore.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tracescore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tracescore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tracescore.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tracescore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tracescore.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "tracescore.specsConfigMap" -}}
{{- default (printf "%s-specs" (include "tracescore.fullname" .)) .Values.existingSpecsConfigMap }}
{{- end }}

{{- define "tracescore.hasSpecs" -}}
{{- if or .Values.specs .Values.existingSpecsConfigMap }}true{{ end }}
{{- end }}

{{/* httpGet probe on the HTTP listener. The Host header is set because tracescore's HTTP API answers only
Host names it knows (DNS-rebinding defence) and the kubelet would send the pod IP. */}}
{{- define "tracescore.httpProbe" -}}
httpGet:
  path: {{ .path }}
  port: http
  scheme: {{ if .root.Values.insecureListen }}HTTP{{ else }}HTTPS{{ end }}
  httpHeaders:
    - name: Host
      value: localhost
{{- end }}
