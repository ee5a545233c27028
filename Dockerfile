# ehr-gateway: one image for every role (serve, serve --only ehr|emdr|worker, and the CLI commands).
# The runtime is the Node.js the project pins (tools/node: 24.21.0).

FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY specs ./specs
COPY generated ./generated
COPY src ./src
COPY scripts ./scripts
# The build needs the dev packages (TypeScript, esbuild, redoc for the /docs bundle, AssemblyScript
# for the GOST check's WebAssembly); the image keeps the production ones only. Optional ones go too:
# embedded-postgres (~60 MB of PostgreSQL binaries) is for a single machine without DATABASE_URL, and
# a container always sets DATABASE_URL. Then the files of production packages the service never reads
# (scripts/prune-production.sh: ~60 MB of Medplum's FHIR definitions).
RUN node --import tsx scripts/build-wasm.ts && npx --no-install tsc -p tsconfig.build.json \
  && cp src/emdr/signatures/crypto/gost.wasm dist/src/emdr/signatures/crypto/ \
  && node --import tsx scripts/build-docs.ts && npm prune --omit=dev --omit=optional \
  && scripts/prune-production.sh node_modules

FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/specs ./specs
# 1000 is the image's unprivileged user node.
USER 1000:1000
EXPOSE 8080 8081
# GET /healthz of the internal listener, which every role has (src/health-probe.ts).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "dist/src/health-probe.js"]
ENTRYPOINT ["node", "dist/src/main.js"]
CMD ["serve"]
