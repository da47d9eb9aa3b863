{{/* Chart name, truncated to the 63 characters a label allows. */}}
{{- define "agent-test-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, plus the chart name unless it already holds it. */}}
{{- define "agent-test-gateway.fullname" -}}
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

{{- define "agent-test-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agent-test-gateway.labels" -}}
helm.sh/chart: {{ include "agent-test-gateway.chart" . }}
{{ include "agent-test-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Immutable once deployed: a Deployment's selector cannot change. */}}
{{- define "agent-test-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agent-test-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The Secret holding PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY: the given one, or the chart's. */}}
{{- define "agent-test-gateway.identitySecretName" -}}
{{- .Values.identity.existingSecret | default (include "agent-test-gateway.fullname" .) }}
{{- end }}

{{/*
terminationGracePeriodSeconds, refused unless it is above
  preStopSleepSeconds + (config.turnBudgetMs + config.shutdownGraceMs) / 1000   (5 + 90 + 95 = 190 by default)
The kubelet starts this clock when it begins terminating the pod and sends SIGKILL when it runs
out, so everything before the process exits must fit in it:
  - preStopSleepSeconds: the preStop hook sleeps first, while endpoints, ingress upstreams and
    kube-proxy stop sending new calls; SIGTERM reaches node only after it;
  - config.shutdownGraceMs: on SIGTERM readiness turns false and running turns get
    SHUTDOWN_GRACE_MS before every engine socket closes (server.ts);
  - config.turnBudgetMs: a turn that began just before SIGTERM may run its whole budget (90 s),
    and is added on top so the bound holds whether or not that turn counts against the grace.
A value at or below the sum lets SIGKILL cut turns off mid-drain, with no close and no answer.
Rounded up to whole seconds.
*/}}
{{- define "agent-test-gateway.terminationGracePeriodSeconds" -}}
{{- $drainMs := add (int64 .Values.config.turnBudgetMs) (int64 .Values.config.shutdownGraceMs) }}
{{- $need := add (int64 .Values.preStopSleepSeconds) (div (add $drainMs 999) 1000) }}
{{- $have := int64 .Values.terminationGracePeriodSeconds }}
{{- if le $have $need }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be above preStopSleepSeconds + (config.turnBudgetMs + config.shutdownGraceMs) / 1000 = %d, or the kubelet kills running turns mid-drain" $have $need) }}
{{- end }}
{{- $have }}
{{- end }}

{{/* The ingress timeout, refused when a start (sign-in, connect, a whole turn) could outlast it. */}}
{{- define "agent-test-gateway.proxyTimeoutSeconds" -}}
{{- $callMs := add (int64 .Values.config.turnBudgetMs) (int64 .Values.config.engineConnectTimeoutMs) (int64 .Values.config.platformTimeoutMs) }}
{{- $need := div (add $callMs 999) 1000 }}
{{- $have := int64 .Values.ingress.proxyTimeoutSeconds }}
{{- if le $have $need }}
{{- fail (printf "ingress.proxyTimeoutSeconds (%d) must be above (config.turnBudgetMs + config.engineConnectTimeoutMs + config.platformTimeoutMs) / 1000 = %d, or nginx cuts off long turns" $have $need) }}
{{- end }}
{{- $have }}
{{- end }}

{{/* The Secret holding PEER_SECRET: the given one, or the chart's (generated once). */}}
{{- define "agent-test-gateway.peerSecretName" -}}
{{- .Values.peers.existingSecret | default (printf "%s-peers" (include "agent-test-gateway.fullname" .) | trunc 63 | trimSuffix "-") }}
{{- end }}

{{/* The headless Service whose records are the pods of the release (PEER_DNS). */}}
{{- define "agent-test-gateway.peerServiceName" -}}
{{- printf "%s-peers" (include "agent-test-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
