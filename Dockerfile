# Steady as a container: `docker build -t steady .` then
# `docker run -p 3000:3000 -v steady-data:/data steady` (embedded database in /data), or
# `docker compose up` for the app beside PostgreSQL 16 (see compose.yaml).
#
# test/container.test.ts runs the runtime stage's install and start commands from a clean
# copy, exactly as written here: keep the two in step.

# --- build: compile TypeScript to dist/ --------------------------------------------------
FROM node:20-slim AS build
WORKDIR /app
# A compiler for the addon in native/malloc-trim (README, Memory), which npm ci's postinstall
# builds; the runtime stage has none and copies the addon from here.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY native ./native
COPY scripts/build-native.mjs ./scripts/build-native.mjs
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- runtime: production dependencies, the compiled code, migrations and prompts ----------
FROM node:20-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
COPY native ./native
COPY scripts/build-native.mjs ./scripts/build-native.mjs
# Without a compiler here the postinstall skips the addon; the build stage's is copied after.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/native/malloc-trim/build/Release/malloc_trim.node ./native/malloc-trim/build/Release/
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY prompts ./prompts
COPY scripts/run-node.sh ./scripts/run-node.sh
# The embedded database lives in DATA_DIR; the unprivileged `node` user of the base image owns it.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# node:20-slim has no curl: Node's own fetch asks the liveness endpoint.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# As `npm start`: scripts/run-node.sh picks the memory settings by database (README, Memory) and
# execs node, which stays the container's first process, so `docker stop`'s SIGTERM reaches it.
CMD ["sh", "scripts/run-node.sh", "dist/src/main.js"]
