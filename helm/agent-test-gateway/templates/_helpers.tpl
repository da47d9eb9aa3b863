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

{{/*
Monitors (docs/monitors.md). A monitor's name: what the service takes for --monitor (letters,
digits, ".", "_", "-", at most 64), and since it is also a label value on the CronJob, its Jobs
and pods, what Kubernetes takes there too: at most 63, a letter or digit at both ends.
Called with (dict "root" $ "monitor" $m); fails on a monitor the chart cannot render.
*/}}
{{- define "agent-test-gateway.validateMonitor" -}}
{{- $m := .monitor }}
{{- $name := toString ($m.name | default "") }}
{{- if not (regexMatch "^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$" $name) }}
{{- fail (printf "monitors: name %q must be letters, digits, \".\", \"_\" and \"-\", at most 63, beginning and ending with a letter or digit" $name) }}
{{- end }}
{{- if not $m.schedule }}{{ fail (printf "monitors[%s]: schedule (a cron expression) is required" $name) }}{{ end }}
{{- if not $m.agent }}{{ fail (printf "monitors[%s]: agent (a ref, or ref.N for one revision) is required" $name) }}{{ end }}
{{- if and $m.suites $m.suitesConfigMap }}{{ fail (printf "monitors[%s]: give suites or suitesConfigMap, not both" $name) }}{{ end }}
{{- if not (or $m.suites $m.suitesConfigMap) }}{{ fail (printf "monitors[%s]: suites (file name: YAML text) or suitesConfigMap (an existing ConfigMap) is required" $name) }}{{ end }}
{{- range $file, $_ := ($m.suites | default dict) }}
{{- if not (regexMatch "^[A-Za-z0-9._-]+\\.yaml$" $file) }}{{ fail (printf "monitors[%s]: suites key %q must be a file name ending in .yaml" $name $file) }}{{ end }}
{{- end }}
{{- if and $m.repeat $m.maxAttempts }}{{ fail (printf "monitors[%s]: give repeat or maxAttempts, not both" $name) }}{{ end }}
{{- if not (and $m.tokenSecret $m.tokenSecret.name $m.tokenSecret.key) }}{{ fail (printf "monitors[%s]: tokenSecret.name and tokenSecret.key (an existing Secret holding the caller's platform token) are required" $name) }}{{ end }}
{{- if and $m.staleAfter (not (regexMatch "^[0-9]+[smhd]?$" (toString $m.staleAfter))) }}{{ fail (printf "monitors[%s]: staleAfter %q must be seconds or a number with s, m, h or d" $name (toString $m.staleAfter)) }}{{ end }}
{{- if and $m.window (not (has (toString $m.window) (list "6h" "26h" "74h"))) }}{{ fail (printf "monitors[%s]: window %q must be 6h, 26h or 74h" $name (toString $m.window)) }}{{ end }}
{{- $tz := $m.timeZone | default $.root.Values.monitorDefaults.timeZone | default "" | toString }}
{{- if and $tz (not (regexMatch "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$" $tz)) }}{{ fail (printf "monitors[%s]: timeZone %q must be an IANA time zone name such as Europe/Prague or Etc/UTC" $name $tz) }}{{ end }}
{{- range $key, $_ := ($m.alerts | default dict) }}
{{- if not (has $key (list "passRateDropPoints" "minAttempts" "failingRatio" "failingMinAttempts")) }}{{ fail (printf "monitors[%s]: alerts.%s is not a threshold (passRateDropPoints, minAttempts, failingRatio, failingMinAttempts)" $name $key) }}{{ end }}
{{- end }}
{{- end }}

{{/* A monitor's CronJob name: the release's fullname and the monitor's, DNS-safe, within the 52 characters a CronJob name may have. */}}
{{- define "agent-test-gateway.monitorFullname" -}}
{{- $name := .monitor.name | toString | lower | replace "_" "-" | replace "." "-" }}
{{- printf "%s-%s" (include "agent-test-gateway.fullname" .root) $name | trunc 52 | trimSuffix "-" }}
{{- end }}

{{/* Labels of a monitor's CronJob, Jobs and pods: not the Deployment's selector, so no Service, PodDisruptionBudget or Deployment takes them for its pods. */}}
{{- define "agent-test-gateway.monitorLabels" -}}
helm.sh/chart: {{ include "agent-test-gateway.chart" .root }}
app.kubernetes.io/name: {{ printf "%s-monitor" (include "agent-test-gateway.name" .root) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: monitor
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
agent-test-gateway/monitor: {{ .monitor.name | toString | quote }}
{{- end }}

{{/*
A monitor's schedule's interval in seconds where the schedule says it plainly, else 0. Plainly:
the day-of-month and month fields are "*", and (a "/N" step written after a star; the two
characters cannot stand together in a template comment)
  minute "*" and hour "*" (every minute), any day      -> 1 minute
  minute step N and hour "*"                           -> N minutes
  minute M and hour "*" (hourly)                       -> 1 hour
  minute M and hour step N                             -> N hours
  minute M and hour H, every day (daily)               -> 1 day
  minute M and hour H, days 1-5 (weekdays)             -> 3 days (the longest gap: the weekend)
or @hourly, @daily, @midnight.
*/}}
{{- define "agent-test-gateway.monitorIntervalSeconds" -}}
{{- $f := regexSplit "\\s+" (trim (toString .monitor.schedule)) -1 }}
{{- $interval := 0 }}
{{- if eq (index $f 0) "@hourly" }}{{ $interval = 3600 }}
{{- else if has (index $f 0) (list "@daily" "@midnight") }}{{ $interval = 86400 }}
{{- else if and (eq (len $f) 5) (eq (index $f 2) "*") (eq (index $f 3) "*") }}
{{- $min := index $f 0 }}
{{- $hour := index $f 1 }}
{{- $day := index $f 4 }}
{{- if and (eq $day "*") (eq $min "*") (eq $hour "*") }}{{ $interval = 60 }}
{{- else if and (eq $day "*") (regexMatch "^\\*/[0-9]+$" $min) (eq $hour "*") }}{{ $interval = mul (trimPrefix "*/" $min | int64) 60 }}
{{- else if and (eq $day "*") (regexMatch "^[0-9]+$" $min) (eq $hour "*") }}{{ $interval = 3600 }}
{{- else if and (eq $day "*") (regexMatch "^[0-9]+$" $min) (regexMatch "^\\*/[0-9]+$" $hour) }}{{ $interval = mul (trimPrefix "*/" $hour | int64) 3600 }}
{{- else if and (eq $day "*") (regexMatch "^[0-9]+$" $min) (regexMatch "^[0-9]+$" $hour) }}{{ $interval = 86400 }}
{{- else if and (regexMatch "^[0-9]+$" $min) (regexMatch "^[0-9]+$" $hour) (has $day (list "1-5" "MON-FRI" "mon-fri")) }}{{ $interval = 259200 }}
{{- end }}
{{- end }}
{{- $interval }}
{{- end }}

{{/*
A monitor's staleAfter in seconds: its own (seconds, or a number with s, m, h or d), else twice
its schedule's interval where the schedule says it plainly (monitorIntervalSeconds), else 2 h.
*/}}
{{- define "agent-test-gateway.monitorStaleAfterSeconds" -}}
{{- $m := .monitor }}
{{- if $m.staleAfter }}
{{- $v := toString $m.staleAfter }}
{{- $n := regexFind "^[0-9]+" $v | int64 }}
{{- $unit := regexFind "[smhd]$" $v | default "s" }}
{{- mul $n (get (dict "s" 1 "m" 60 "h" 3600 "d" 86400) $unit) }}
{{- else }}
{{- $interval := include "agent-test-gateway.monitorIntervalSeconds" . | int64 }}
{{- if gt $interval 0 }}{{ mul $interval 2 }}{{ else }}7200{{ end }}
{{- end }}
{{- end }}

{{/*
A monitor's window (docs/monitors.md): what its alerts count as recent. Its own `window`, else
from its schedule: runs at most 2 h apart -> 6h (the last 6 hours); a daily run, or runs 3 to 24 h
apart -> 26h (its newest run, held until the next); a weekday run (M H * * 1-5) -> 74h (over the
weekend too); a schedule not said plainly -> 26h.
*/}}
{{- define "agent-test-gateway.monitorWindow" -}}
{{- if .monitor.window }}{{ .monitor.window | toString }}
{{- else }}
{{- $interval := include "agent-test-gateway.monitorIntervalSeconds" . | int64 }}
{{- if and (gt $interval 0) (le $interval 7200) }}6h
{{- else if gt $interval 86400 }}74h
{{- else }}26h
{{- end }}
{{- end }}
{{- end }}

{{/*
The rule group the PrometheusRule adds to files/prometheus-rules.yaml: the monitors' alert
thresholds (metrics.prometheusRule.monitorAlerts, then each monitor's own with its `alerts` over
them), each monitor's window and staleAfter as recorded series, which the file's rules read (and replace by defaults where a plain Prometheus has none).
*/}}
{{- define "agent-test-gateway.monitorRuleGroup" -}}
{{- $a := .Values.metrics.prometheusRule.monitorAlerts }}
- name: agent-test-gateway.monitor-settings
  rules:
    {{- range $threshold, $value := dict "pass_rate_drop_points" $a.passRateDropPoints "min_attempts" $a.minAttempts "failing_ratio" $a.failingRatio "failing_min_attempts" $a.failingMinAttempts }}
    - record: agent_test_gateway:monitor_alert_threshold:values
      expr: vector({{ $value | float64 }})
      labels:
        namespace: {{ $.Release.Namespace | quote }}
        job: agent-test-gateway
        threshold: {{ $threshold }}
    {{- end }}
    {{- range $m := .Values.monitors }}
    {{- $window := include "agent-test-gateway.monitorWindow" (dict "root" $ "monitor" $m) }}
    - record: agent_test_gateway:monitor_window_seconds:values
      expr: vector({{ get (dict "6h" 21600 "26h" 93600 "74h" 266400) $window }})
      labels:
        namespace: {{ $.Release.Namespace | quote }}
        job: agent-test-gateway
        monitor: {{ $m.name | toString | quote }}
        window: {{ $window }}
    {{- $own := mergeOverwrite (deepCopy $a) ($m.alerts | default dict) }}
    {{- range $threshold, $value := dict "pass_rate_drop_points" $own.passRateDropPoints "min_attempts" $own.minAttempts "failing_ratio" $own.failingRatio "failing_min_attempts" $own.failingMinAttempts }}
    - record: agent_test_gateway:monitor_alert_threshold:values
      expr: vector({{ $value | float64 }})
      labels:
        namespace: {{ $.Release.Namespace | quote }}
        job: agent-test-gateway
        monitor: {{ $m.name | toString | quote }}
        threshold: {{ $threshold }}
    {{- end }}
    - record: agent_test_gateway:monitor_stale_after_seconds:values
      expr: vector({{ include "agent-test-gateway.monitorStaleAfterSeconds" (dict "root" $ "monitor" $m) }})
      labels:
        namespace: {{ $.Release.Namespace | quote }}
        job: agent-test-gateway
        monitor: {{ $m.name | toString | quote }}
        agent: {{ $m.agent | toString | quote }}
    {{- end }}
{{- end }}

{{/*
V8's old space in MiB: heap.percentOfMemoryLimit percent of resources.limits.memory, a Kubernetes
quantity (512Mi, 1Gi, 1G, 536870912). Empty without either: Node then sizes the heap itself, from
the cgroup's limit.
*/}}
{{- define "agent-test-gateway.maxOldSpaceMiB" -}}
{{- $limit := toString (dig "limits" "memory" "" (.Values.resources | default dict)) }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $limit }}
{{- $unit := trimPrefix $number $limit }}
{{- $bytesPer := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 }}
{{- $percent := .Values.heap.percentOfMemoryLimit }}
{{- if and $percent $number (hasKey $bytesPer $unit) }}
{{- divf (mulf $number (get $bytesPer $unit) $percent) 104857600 | floor | int }}
{{- end }}
{{- end }}
