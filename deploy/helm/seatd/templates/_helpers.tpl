{{/* The chart's name. */}}
{{- define "seatd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{/* The resources' name: the release's, with "-seatd" unless it holds it already. */}}
{{- define "seatd.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The release's labels, on every object. */}}
{{- define "seatd.instanceLabels" -}}
app.kubernetes.io/name: {{ include "seatd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The labels that select the serving pods (not the migrate Job's): they never
change across upgrades.
*/}}
{{- define "seatd.selectorLabels" -}}
{{ include "seatd.instanceLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "seatd.labels" -}}
{{ include "seatd.instanceLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "seatd.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end -}}

{{/* The probes' scheme follows TLS: the kubelet's HTTPS probes do not verify the certificate. */}}
{{- define "seatd.scheme" -}}
{{ if .Values.tls.secretName }}HTTPS{{ else }}HTTP{{ end }}
{{- end -}}

{{/* An environment variable from an existing Secret: (list name secretRef). */}}
{{- define "seatd.secretEnv" -}}
{{- $name := index . 0 -}}
{{- $ref := index . 1 -}}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.secretName }}
      key: {{ $ref.secretKey }}
{{- end -}}

{{/* The operator key's Secret: the one named, or the one the chart generates (embedded mode). */}}
{{- define "seatd.operatorKeyRef" -}}
{{- if .Values.operatorKey.secretName -}}
secretName: {{ .Values.operatorKey.secretName }}
secretKey: {{ .Values.operatorKey.secretKey }}
{{- else -}}
secretName: {{ include "seatd.fullname" . }}-operator-key
secretKey: operator-key
{{- end -}}
{{- end -}}

{{/* The distributed mode's Secrets, required even when the schema is skipped. */}}
{{- define "seatd.distributedEnv" -}}
{{- $_ := required "distributed.postgres.secretName: distributed mode needs an existing Secret holding the PostgreSQL URL" .Values.distributed.postgres.secretName -}}
{{- $_ = required "distributed.redis.secretName: distributed mode needs an existing Secret holding the Redis URL" .Values.distributed.redis.secretName -}}
{{- $_ = required "operatorKey.secretName: distributed mode needs an existing Secret holding the operator key (every pod shares it)" .Values.operatorKey.secretName -}}
{{ include "seatd.secretEnv" (list "SEATD_POSTGRES_URL" .Values.distributed.postgres) }}
{{ include "seatd.secretEnv" (list "SEATD_REDIS_URL" .Values.distributed.redis) }}
{{- end -}}

{{/*
A config value as seatd's flag parser reads it: a whole number read from
YAML (a float64 to Helm) is printed as one, never as 1e+06.
*/}}
{{- define "seatd.flagValue" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{- define "seatd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurityContext.runAsUser }}
{{- with .Values.podSecurityContext.runAsGroup }}
runAsGroup: {{ . }}
{{- end }}
{{- with .Values.podSecurityContext.fsGroup }}
fsGroup: {{ . }}
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "seatd.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
The pod template of both modes: seatd serving gRPC on 7070 and HTTP (REST,
/metrics, /healthz, /readyz) on 8080.
*/}}
{{- define "seatd.podTemplate" -}}
{{- $distributed := eq .Values.mode "distributed" -}}
{{- $s := .Values.shutdown -}}
metadata:
  labels:
    {{- include "seatd.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: {{ add $s.preStopSeconds $s.drainDelaySeconds $s.timeoutSeconds 10 }}
  securityContext:
    {{- include "seatd.podSecurityContext" . | nindent 4 }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- range . }}
    - name: {{ . }}
    {{- end }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: seatd
      image: {{ include "seatd.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - --grpc-addr=:7070
        - --http-addr=:8080
        {{- if not $distributed }}
        - --data-dir=/data
        {{- end }}
        {{- if .Values.tls.secretName }}
        - --tls-cert-file=/etc/seatd/tls/tls.crt
        - --tls-key-file=/etc/seatd/tls/tls.key
        {{- end }}
        - --drain-delay={{ $s.drainDelaySeconds }}s
        - --shutdown-timeout={{ $s.timeoutSeconds }}s
        {{- if and $distributed .Values.distributed.migrateJob.enabled }}
        - --auto-migrate=false
        {{- end }}
        {{- range $flag, $value := .Values.config }}
        - {{ printf "--%s=%s" $flag (include "seatd.flagValue" $value) | quote }}
        {{- end }}
      ports:
        - name: grpc
          containerPort: 7070
        - name: http
          containerPort: 8080
      env:
        - name: SEATD_INSTANCE_ID
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- if $distributed }}
        {{- include "seatd.distributedEnv" . | nindent 8 }}
        {{- end }}
        {{- include "seatd.secretEnv" (list "SEATD_OPERATOR_KEY" (include "seatd.operatorKeyRef" . | fromYaml)) | nindent 8 }}
        {{- if .Values.signingKeyEncryptionKey.secretName }}
        {{- include "seatd.secretEnv" (list "SEATD_SIGNING_KEY_ENCRYPTION_KEY" .Values.signingKeyEncryptionKey) | nindent 8 }}
        {{- end }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
          scheme: {{ include "seatd.scheme" . }}
        {{- toYaml .Values.probes.readiness | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
          scheme: {{ include "seatd.scheme" . }}
        {{- toYaml .Values.probes.liveness | nindent 8 }}
      startupProbe:
        httpGet:
          path: /healthz
          port: http
          scheme: {{ include "seatd.scheme" . }}
        {{- toYaml .Values.probes.startup | nindent 8 }}
      {{- if gt (int $s.preStopSeconds) 0 }}
      lifecycle:
        preStop:
          sleep:
            seconds: {{ $s.preStopSeconds }}
      {{- end }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "seatd.containerSecurityContext" . | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if not $distributed }}
        - name: data
          mountPath: /data
        {{- end }}
        {{- if .Values.tls.secretName }}
        - name: tls
          mountPath: /etc/seatd/tls
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if .Values.tls.secretName }}
    - name: tls
      secret:
        secretName: {{ .Values.tls.secretName }}
    {{- end }}
{{- end -}}
